/* The mapping of a weights file, the table of mapped files and the SIGBUS
 * handler that reads it. The handler only reads the table and calls
 * async-signal-safe functions (write, _exit); the table's slots are
 * written under a lock, each slot's path before its base, so the handler
 * never sees a half-written entry as live. */
#include "core/mapped.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"

#define MAPPED_SLOTS 64
#define MAPPED_PATH_SIZE 512

typedef struct mapping {
    const void *volatile base;  /* NULL: the slot is free */
    size_t size;
    char path[MAPPED_PATH_SIZE];
} mapping;

static mapping table[MAPPED_SLOTS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

void ted_mapped_add(const void *base, size_t size, const char *path)
{
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAPPED_SLOTS; i++) {
        if (table[i].base)
            continue;
        table[i].size = size;
        strncpy(table[i].path, path, MAPPED_PATH_SIZE - 1);
        table[i].path[MAPPED_PATH_SIZE - 1] = '\0';
        __atomic_store_n(&table[i].base, base, __ATOMIC_RELEASE);
        break;
    }
    pthread_mutex_unlock(&table_lock);
}

void ted_mapped_remove(const void *base)
{
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAPPED_SLOTS; i++)
        if (table[i].base == base)
            __atomic_store_n(&table[i].base, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&table_lock);
}

/* Maps the whole of `fd`, which names `path` in messages. */
static ted_status map_descriptor(int fd, const char *path, const unsigned char **bytes,
                                 size_t *size, ted_error *err)
{
    struct stat info;
    if (fstat(fd, &info) != 0)
        return ted_fail(err, TED_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if ((uint64_t)info.st_size > SIZE_MAX)
        return ted_fail(err, TED_ERR_IO, "%s: %lld bytes do not fit in memory", path,
                        (long long)info.st_size);
    *bytes = NULL;
    *size = 0;
    if (info.st_size == 0)
        return TED_OK;
    void *map = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return ted_fail(err, TED_ERR_IO, "%s: cannot map %lld bytes: %s", path,
                        (long long)info.st_size, strerror(errno));
    /* Loading reads every weight, so ask for read-ahead; only speed is at
     * stake if the kernel declines. */
    (void)posix_madvise(map, (size_t)info.st_size, POSIX_MADV_WILLNEED);
    *bytes = map;
    *size = (size_t)info.st_size;
    return TED_OK;
}

ted_status ted_map_file(const char *path, const unsigned char **bytes, size_t *size,
                        ted_error *err)
{
    int fd;
    ted_status status = ted_open_regular(path, &fd, err);
    if (status != TED_OK)
        return status;
    status = map_descriptor(fd, path, bytes, size, err);
    /* The mapping outlives the descriptor, and nothing was written through
     * it, so a failing close loses nothing. */
    (void)close(fd);
    if (status == TED_OK && *bytes)
        ted_mapped_add(*bytes, *size, path);
    return status;
}

void ted_unmap_file(const void *bytes, size_t size)
{
    if (!bytes)
        return;
    ted_mapped_remove(bytes);
    munmap((void *)bytes, size);
}

ted_status ted_map_parse(const char *path, ted_bytes_parser *parse, void *into,
                         ted_error *err)
{
    const unsigned char *bytes = NULL;
    size_t size = 0;
    ted_status status = ted_map_file(path, &bytes, &size, err);
    if (status != TED_OK)
        return status;
    status = parse(bytes, size, path, into, err);
    if (status != TED_OK)
        ted_unmap_file(bytes, size);
    return status;
}

static const char *mapped_path_at(const void *address)
{
    uintptr_t a = (uintptr_t)address;
    for (int i = 0; i < MAPPED_SLOTS; i++) {
        uintptr_t base = (uintptr_t)__atomic_load_n(&table[i].base, __ATOMIC_ACQUIRE);
        if (base && a >= base && a - base < table[i].size)
            return table[i].path;
    }
    return NULL;
}

static void say(const char *text) { (void)!write(STDERR_FILENO, text, strlen(text)); }

static void on_bus_error(int signal, siginfo_t *info, void *context)
{
    (void)context;
    const char *path = mapped_path_at(info->si_addr);
    say("ted: ");
    say(path ? path : "a memory-mapped weights file");
    say(": the file changed while in use (cut short by another program?); "
        "its weights can no longer be read\n");
    (void)signal;
    _exit(1);
}

ted_status ted_report_weight_faults(ted_error *err)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus_error;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, NULL) != 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "cannot install the SIGBUS handler");
    return TED_OK;
}
