/* CVE-2023-50472 (cJSON issue #803): cJSON_SetValuestring dereferences a NULL object,
 * e.g. the result of a failed cJSON_GetObjectItem. */
#include <stdio.h>
#include "cJSON.h"

int main(void)
{
    cJSON *object = cJSON_Parse("{\"name\": \"old\"}");
    char *set = NULL;
    if (object == NULL)
    {
        return 2;
    }
    set = cJSON_SetValuestring(cJSON_GetObjectItem(object, "missing"), "new");
    if (set != NULL)
    {
        puts("cJSON_SetValuestring set a value on no object");
        return 1;
    }
    puts("cJSON_SetValuestring refused a NULL object");
    cJSON_Delete(object);
    return 0;
}
