/* synth/synth_nilm_table.c: the appliance models of the synthetic NILM
 * households (synth/synth_nilm_impl.h): name, on-power and on-duration
 * thresholds, physical limit, ownership probability. Data only, so every file
 * of the generator reads it and none depends on another for it. */
#include "synth/synth_nilm_impl.h"

const gt_nilm_app_model gt_nilm_apps[NA] = {
    {"fridge", 50.f, 1200.f, 400.f, 0.98f},
    {"freezer", 50.f, 1500.f, 450.f, 0.45f},
    {"kettle", 1000.f, 180.f, 3200.f, 0.85f},
    {"microwave", 300.f, 150.f, 1600.f, 0.80f},
    {"toaster", 400.f, 180.f, 1500.f, 0.50f},
    {"oven", 500.f, 2400.f, 5000.f, 0.85f},
    {"washing_machine", 20.f, 5400.f, 2600.f, 0.90f},
    {"dishwasher", 20.f, 7200.f, 2500.f, 0.55f},
    {"tumble_dryer", 200.f, 3600.f, 3000.f, 0.40f},
    {"electric_shower", 3000.f, 480.f, 11000.f, 0.30f},
    {"ev_charger", 1000.f, 14400.f, 7600.f, 0.20f},
    {"heat_pump", 200.f, 1800.f, 4500.f, 0.35f},
    {"television", 20.f, 7200.f, 300.f, 0.95f},
    {"computer", 20.f, 7200.f, 350.f, 0.80f},
    {"lighting", 15.f, 10800.f, 800.f, 1.00f},
};
