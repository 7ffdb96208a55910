/* CVE-2023-50472 (cJSON issue #803): cJSON_SetValuestring on a string item whose
 * valuestring is NULL passes NULL to strlen. */
#include <stdio.h>
#include <stdlib.h>
#include "cJSON.h"

int main(void)
{
    cJSON *item = cJSON_CreateString("corrupted");
    if (item == NULL)
    {
        return 2;
    }
    cJSON_free(item->valuestring);
    item->valuestring = NULL;
    if (cJSON_SetValuestring(item, "new") != NULL)
    {
        puts("cJSON_SetValuestring wrote into a corrupted item");
        return 1;
    }
    puts("cJSON_SetValuestring refused a corrupted item");
    cJSON_Delete(item);
    return 0;
}
