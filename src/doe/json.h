/* doe/json.h: reading a sweep's JSON files (doe/json.c). */
#ifndef GT_DOE_JSON_H
#define GT_DOE_JSON_H

#include <cjson/cJSON.h>

/* The document at path, or NULL: missing, not JSON, or larger than
 * GT_READ_JSON_MAX_BYTES (then a warning names the file). */
cJSON *gt_doe_json_read(const char *path);

#endif
