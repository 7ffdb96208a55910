/* greet: read "NAME=<name>" lines from standard input and greet each name.
 *
 * Lines that are not of that form are skipped with a note on standard error.
 */
#include <stdio.h>
#include <string.h>

#define NAME_SIZE 16

/* Copy the value of a "NAME=<value>" line into out; 0 on success, -1 if malformed. */
static int parse_name(const char *line, char *out)
{
    if (strncmp(line, "NAME=", 5) != 0)
        return -1;
    const char *value = line + 5;
    size_t len = strcspn(value, "\r\n");
    memcpy(out, value, len);
    out[len] = '\0';
    return 0;
}

int main(void)
{
    char line[256];
    int greeted = 0;

    while (fgets(line, sizeof line, stdin)) {
        char name[NAME_SIZE];
        if (parse_name(line, name) != 0) {
            fprintf(stderr, "greet: skipping malformed line\n");
            continue;
        }
        if (name[0] == '\0')
            printf("Hello, stranger!\n");
        else
            printf("Hello, %s!\n", name);
        greeted++;
    }
    printf("%d greeted\n", greeted);
    return 0;
}
