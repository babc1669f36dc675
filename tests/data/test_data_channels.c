/* tests/data/test_data_channels.c: the channel kinds the PdM spike test goes
 * by (gt_data_channel_kind) for the names and units of the synthetic gearbox
 * files and of CARE to Compare's SCADA exports (anonymised names, units from
 * feature_description.csv in UTF-8 or Latin-1), and data.spike_channels
 * (auto, all, none, name patterns). */
#include <string.h>

#include "data/dataset.h"
#include "test.h"

static void kind(const char *name, const char *unit, gt_channel_kind want) {
    gt_channel_kind got = gt_data_channel_kind(name, unit);
    if (got != want) fprintf(stderr, "%s [%s]: %s, want %s\n", name, unit, gt_data_channel_kind_name(got),
                             gt_data_channel_kind_name(want));
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
    gt_data_config_defaults(&c, GT_TASK_PDM);
    TEST_CHECK(!strcmp(c.spike_channels, "auto"));
    TEST_CHECK(gt_data_spike_channel(&c, "gearbox_oil_temp", "degC"));
    TEST_CHECK(!gt_data_spike_channel(&c, "wind_speed", "m/s"));
    snprintf(c.spike_channels, sizeof c.spike_channels, "all");
    TEST_CHECK(gt_data_spike_channel(&c, "wind_speed", "m/s"));
    snprintf(c.spike_channels, sizeof c.spike_channels, "none");
    TEST_CHECK(!gt_data_spike_channel(&c, "gearbox_oil_temp", "degC"));
    snprintf(c.spike_channels, sizeof c.spike_channels, "*temp*, vib_*");
    TEST_CHECK(gt_data_spike_channel(&c, "gearbox_oil_temp", "degC"));
    TEST_CHECK(gt_data_spike_channel(&c, "vib_generator_rms", "mm/s"));
    TEST_CHECK(!gt_data_spike_channel(&c, "gearbox_oil_pressure", "bar"));
    TEST_DONE();
}
