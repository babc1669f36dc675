/* tests/data/test_data_channels.c: the channel kinds the PdM spike test goes
 * by (gt_pdm_channel_kind) for the names and units of the synthetic gearbox
 * files and of CARE to Compare's SCADA exports (anonymised names, units from
 * feature_description.csv in UTF-8 or Latin-1), data.spike_channels
 * (auto, all, none, name patterns), and the channel roles of a
 * normal-behaviour model (data.pdm_target = nbm: gt_pdm_nbm_roles with auto
 * and name patterns, and with CARE's descriptions, gt_pdm_nbm_input). */
#include <string.h>

#include "pdm/pdm.h"
#include "data/dataset.h"
#include "test.h"

static void kind(const char *name, const char *unit, gt_channel_kind want) {
    gt_channel_kind got = gt_pdm_channel_kind(name, unit);
    if (got != want) fprintf(stderr, "%s [%s]: %s, want %s\n", name, unit, gt_pdm_channel_kind_name(got),
                             gt_pdm_channel_kind_name(want));
    TEST_CHECK(got == want);
}

int main(void) {
    /* the synthetic 10 Hz gearbox channels */
    kind("wind_speed", "m/s", GT_CHANNEL_OPERATIONAL);
    kind("wind_direction", "deg", GT_CHANNEL_ANGLE);
    kind("yaw_position", "deg", GT_CHANNEL_ANGLE);
    kind("pitch_angle", "deg", GT_CHANNEL_ANGLE);
    kind("rotor_speed", "rpm", GT_CHANNEL_OPERATIONAL);
    kind("active_power", "kW", GT_CHANNEL_OPERATIONAL);
    kind("reactive_power", "kvar", GT_CHANNEL_OPERATIONAL);
    kind("gearbox_oil_temp", "degC", GT_CHANNEL_CONDITION);
    kind("gearbox_oil_pressure", "bar", GT_CHANNEL_CONDITION);
    kind("vib_gearbox_hss_rms", "mm/s", GT_CHANNEL_CONDITION);
    kind("vib_gearbox_hss_kurtosis", "1", GT_CHANNEL_CONDITION);
    kind("tower_accel_rms", "m/s2", GT_CHANNEL_CONDITION);
    /* CARE: anonymised sensors, units in UTF-8 or Latin-1, interval statistics */
    kind("sensor_0_avg", "\xc2\xb0" "C", GT_CHANNEL_CONDITION);
    kind("sensor_0_avg", "\xb0" "C", GT_CHANNEL_CONDITION);
    kind("sensor_0_max", "\xb0" "C", GT_CHANNEL_AGGREGATE);
    kind("wind_speed_3_std", "m/s", GT_CHANNEL_AGGREGATE);
    kind("sensor_7_avg", "\xc2\xb0", GT_CHANNEL_ANGLE);
    kind("sensor_5", "kWh", GT_CHANNEL_OPERATIONAL);
    kind("power_29_avg", "kW", GT_CHANNEL_OPERATIONAL);
    kind("sensor_52_avg", "A", GT_CHANNEL_OPERATIONAL);
    kind("sensor_11_avg", "", GT_CHANNEL_CONDITION); /* unknown: the spike test's default */
    kind("pitch_motor_temp", "", GT_CHANNEL_CONDITION); /* a temperature, though named after the pitch */

    gt_data_config c;
    gt_pdm_data_defaults(&c);
    gt_pdm_data_config *pc = gt_pdm_data_cfg_set(&c); /* PdM's block of c */
    TEST_CHECK(!strcmp(pc->spike_channels, "auto"));
    TEST_CHECK(gt_pdm_spike_channel(&c, "gearbox_oil_temp", NULL, "degC"));
    TEST_CHECK(!gt_pdm_spike_channel(&c, "wind_speed", NULL, "m/s"));
    snprintf(pc->spike_channels, sizeof pc->spike_channels, "all");
    TEST_CHECK(gt_pdm_spike_channel(&c, "wind_speed", NULL, "m/s"));
    snprintf(pc->spike_channels, sizeof pc->spike_channels, "none");
    TEST_CHECK(!gt_pdm_spike_channel(&c, "gearbox_oil_temp", NULL, "degC"));
    snprintf(pc->spike_channels, sizeof pc->spike_channels, "*temp*, vib_*");
    TEST_CHECK(gt_pdm_spike_channel(&c, "gearbox_oil_temp", NULL, "degC"));
    TEST_CHECK(gt_pdm_spike_channel(&c, "vib_generator_rms", NULL, "mm/s"));
    TEST_CHECK(!gt_pdm_spike_channel(&c, "gearbox_oil_pressure", NULL, "bar"));

    /* nbm roles: the channels of tests/import/realistic.py care() and of a CARE export */
    static const gt_io_channel ch[] = {
        {"wind_speed_3_avg", "m/s", ""}, {"wind_speed_3_std", "m/s", ""}, {"power_29_max", "kW", ""},
        {"sensor_rotor_rpm_avg", "rpm", ""}, {"sensor_pitch_avg", "\xc2\xb0", ""},
        {"sensor_ambient_avg", "\xc2\xb0" "C", ""}, {"sensor_gearbox_bearing_avg", "\xc2\xb0" "C", ""},
        {"sensor_gearbox_bearing_max", "\xc2\xb0" "C", ""}, {"sensor_hydraulic_avg", "bar", ""},
        {"sensor_energy", "kWh", ""}, {"sensor_5", "kWh", ""}, {"sensor_11_avg", "\xb0" "C", ""},
        {"vib_gearbox_hss_rms", "mm/s", ""}, {"operating_hours", "h", ""},
        /* CARE's anonymised names: the description (feature_description.csv, /channels/description) decides */
        {"sensor_0_avg", "\xc2\xb0" "C", "Ambient temperature"}, {"sensor_9_avg", "\xc2\xb0" "C", "Temperature gearbox bearing"},
        {"sensor_22_avg", "Wh", "Active energy produced [counter]"}, {"sensor_7_avg", "rpm", "Rotor speed"},
        {"sensor_40_avg", "", "Rotor speed"}};
    enum { NCH = sizeof ch / sizeof ch[0] };
    /* a condition signal's min/max/std (gearbox_bearing_max) is neither: noisy, and it would give the target away */
    static const uint8_t want[NCH] = {GT_NBM_INPUT,  GT_NBM_INPUT,  GT_NBM_INPUT,  GT_NBM_INPUT,  GT_NBM_INPUT,
                                      GT_NBM_INPUT,  GT_NBM_TARGET, GT_NBM_UNUSED, GT_NBM_TARGET, GT_NBM_UNUSED,
                                      GT_NBM_UNUSED, GT_NBM_TARGET, GT_NBM_TARGET, GT_NBM_UNUSED, GT_NBM_INPUT,
                                      GT_NBM_TARGET, GT_NBM_UNUSED, GT_NBM_INPUT,  GT_NBM_INPUT};
    /* the kind reads the description: an anonymous channel without a unit is a rotor speed, not a condition */
    TEST_EQ_INT(gt_pdm_channel_kind_desc("sensor_40_avg", "Rotor speed", ""), GT_CHANNEL_OPERATIONAL);
    TEST_EQ_INT(gt_pdm_channel_kind("sensor_40_avg", ""), GT_CHANNEL_CONDITION);
    TEST_EQ_INT(gt_pdm_channel_kind_desc("sensor_40_std", "Rotor speed", ""), GT_CHANNEL_AGGREGATE);
    TEST_CHECK(!gt_pdm_spike_channel(&c, "sensor_40_avg", "Rotor speed", ""));
    uint8_t role[NCH];
    int n_in, n_tg;
    gt_pdm_data_defaults(&c);
    TEST_CHECK(pc == gt_pdm_data_cfg_set(&c)); /* the block stays where it was */
    TEST_CHECK(pc->target == GT_PDM_TARGET_NEXT && !strcmp(pc->nbm_inputs, "auto") && !strcmp(pc->nbm_targets, "auto"));
    gt_pdm_nbm_roles(&c, ch, NCH, role, &n_in, &n_tg);
    for (int k = 0; k < NCH; k++) {
        if (role[k] != want[k]) fprintf(stderr, "nbm role of %s: %d, want %d\n", ch[k].name, role[k], want[k]);
        TEST_CHECK(role[k] == want[k]);
    }
    TEST_EQ_INT(n_in, 9);
    TEST_EQ_INT(n_tg, 5);
    /* patterns: targets first; a target never an input, even when the input patterns match it */
    snprintf(pc->nbm_targets, sizeof pc->nbm_targets, "*bearing*");
    snprintf(pc->nbm_inputs, sizeof pc->nbm_inputs, "wind_*, *bearing_max, sensor_ambient_avg");
    gt_pdm_nbm_roles(&c, ch, NCH, role, &n_in, &n_tg);
    TEST_EQ_INT(n_tg, 2);
    TEST_EQ_INT(n_in, 3);
    TEST_CHECK(role[6] == GT_NBM_TARGET && role[7] == GT_NBM_TARGET && role[0] == GT_NBM_INPUT &&
               role[1] == GT_NBM_INPUT && role[5] == GT_NBM_INPUT && role[2] == GT_NBM_UNUSED &&
               role[8] == GT_NBM_UNUSED);
    /* targets given, inputs auto: an auto target left out of the targets is not an input */
    snprintf(pc->nbm_inputs, sizeof pc->nbm_inputs, "auto");
    gt_pdm_nbm_roles(&c, ch, NCH, role, &n_in, &n_tg);
    TEST_CHECK(n_in == 9 && n_tg == 2 && role[8] == GT_NBM_UNUSED && role[12] == GT_NBM_UNUSED);
    /* the model input: non-inputs zeroed at every step */
    float x[2 * NCH];
    for (int k = 0; k < 2 * NCH; k++) x[k] = (float)(k + 1);
    gt_pdm_nbm_input(x, 2, NCH, role);
    int bad = 0;
    for (int k = 0; k < 2 * NCH; k++) bad += x[k] != (role[k % NCH] == GT_NBM_INPUT ? (float)(k + 1) : 0.0f);
    TEST_EQ_INT(bad, 0);
    TEST_CHECK(gt_pdm_target_parse("nbm") == GT_PDM_TARGET_NBM &&
               gt_pdm_target_parse("next") == GT_PDM_TARGET_NEXT && gt_pdm_target_parse("lstm") == -1);
    TEST_DONE();
}
