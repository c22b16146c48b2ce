/* argv_secret: lets tritonserver take its repository-API key from a file, so the key is in no argv.
 *
 * Triton 2.51 reads the key only from --http-restricted-api / --grpc-restricted-protocol (KEY=VALUE),
 * and a process's argv is readable in /proc/PID/cmdline. Preloaded into tritonserver by the image's
 * entry point, this constructor runs before main(): for those two flags a value "@/path" is replaced
 * by the file's first line in a heap copy that argv[i] then points to. Main parses the key; the
 * kernel's view of the command line (the original stack strings) still shows only "@/path".
 * Fails closed: an unreadable or empty file stops the process before Triton starts.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const FLAGS[] = {"--http-restricted-api=", "--grpc-restricted-protocol=", NULL};

static char *expand(const char *arg)
{
    const char *at = strstr(arg, "=@/");
    char key[4096];
    FILE *fh;
    size_t len;
    char *out;

    if (at == NULL)
        return NULL;
    fh = fopen(at + 2, "r");
    if (fh == NULL || fgets(key, sizeof(key), fh) == NULL) {
        fprintf(stderr, "argv_secret: cannot read the key file named in %.*s\n", (int)(at - arg), arg);
        _exit(78);
    }
    fclose(fh);
    key[strcspn(key, "\r\n")] = '\0';
    if (key[0] == '\0') {
        fprintf(stderr, "argv_secret: the key file %s is empty\n", at + 2);
        _exit(78);
    }
    len = (size_t)(at - arg) + 1 + strlen(key) + 1;
    out = malloc(len);
    if (out == NULL)
        _exit(71);
    snprintf(out, len, "%.*s=%s", (int)(at - arg), arg, key);
    explicit_bzero(key, sizeof(key));
    return out;
}

__attribute__((constructor)) static void argv_secret(int argc, char **argv, char **envp)
{
    (void)envp;
    /* Triton's backend stubs must not inherit the preload. */
    unsetenv("LD_PRELOAD");
    for (int i = 1; i < argc; i++) {
        for (int f = 0; FLAGS[f] != NULL; f++) {
            if (strncmp(argv[i], FLAGS[f], strlen(FLAGS[f])) == 0) {
                char *expanded = expand(argv[i]);
                if (expanded != NULL)
                    argv[i] = expanded;
            }
        }
    }
}
