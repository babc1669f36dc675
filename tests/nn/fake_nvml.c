/* tests/nn/fake_nvml.c: a stand-in for libnvidia-ml.so.1 with the NVML
 * functions nn/telemetry.c loads, returning fixed readings, so that the
 * dlopen/dlsym path, the sampling thread and the Xid event loop run on a
 * machine without a GPU (test_nn_telemetry_fake_nvml). Not NVML: the real
 * library is checked by test_nn_telemetry where a GPU exists. */
#include <string.h>

typedef struct {
    unsigned int gpu, memory;
} util_t;
typedef struct {
    unsigned long long total, free, used;
} mem_t;
typedef struct {
    void *device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} event_t;

static int g_dev, g_set, g_xid_sent;
static unsigned long long g_ecc_calls;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int rc) { return rc ? "fake error" : "success"; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *id, void **d) {
    if (!id || strcmp(id, "0000:3B:00.0")) return 6; /* NVML_ERROR_NOT_FOUND */
    *d = &g_dev;
    return 0;
}
int nvmlDeviceGetHandleByUUID(const char *u, void **d) { (void)u; *d = &g_dev; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d) { (void)i; *d = &g_dev; return 0; }
int nvmlDeviceGetUtilizationRates(void *d, util_t *u) { (void)d; u->gpu = 42; u->memory = 17; return 0; }
int nvmlDeviceGetMemoryInfo(void *d, mem_t *m) {
    (void)d;
    m->total = 80ull << 30;
    m->used = 10ull << 30;
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned int *t) { (void)d, (void)sensor; *t = 65; return 0; }
int nvmlDeviceGetPowerUsage(void *d, unsigned int *mw) { (void)d; *mw = 250000; return 0; }
int nvmlDeviceGetClockInfo(void *d, int type, unsigned int *c) { (void)d; *c = type == 1 ? 1410 : 2619; return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(void *d, unsigned long long *r) { (void)d; *r = 0x40; return 0; }
int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *c) {
    (void)d, (void)counter;
    *c = type == 1 ? g_ecc_calls++ : 0; /* uncorrected: grows by one per reading */
    return 0;
}
int nvmlEventSetCreate(void **s) { *s = &g_set; return 0; }
int nvmlDeviceRegisterEvents(void *d, unsigned long long types, void *s) { (void)d, (void)types, (void)s; return 0; }
int nvmlEventSetWait_v2(void *s, event_t *e, unsigned int ms) {
    (void)s, (void)ms;
    if (g_xid_sent) return 10; /* NVML_ERROR_TIMEOUT */
    g_xid_sent = 1;
    memset(e, 0, sizeof *e);
    e->eventType = 0x8; /* critical Xid */
    e->eventData = 79;
    return 0;
}
int nvmlEventSetFree(void *s) { (void)s; return 0; }
int nvmlSystemGetDriverVersion(char *buf, unsigned int n) {
    strncpy(buf, "999.fake", n);
    return 0;
}
