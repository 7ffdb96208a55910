/* CVE-2023-50471 (cJSON issue #802): cJSON_InsertItemInArray with a NULL new item
 * dereferences it when the index names an existing item. */
#include <stdio.h>
#include "cJSON.h"

int main(void)
{
    cJSON *array = cJSON_Parse("[1, 2]");
    if (array == NULL)
    {
        return 2;
    }
    if (cJSON_InsertItemInArray(array, 0, NULL))
    {
        puts("cJSON_InsertItemInArray accepted a NULL item");
        return 1;
    }
    puts("cJSON_InsertItemInArray refused a NULL item");
    cJSON_Delete(array);
    return 0;
}
