/* The table of mapped files and the SIGBUS handler that reads it. The
 * handler only reads the table and calls async-signal-safe functions
 * (write, _exit); the table's slots are written under a lock, each slot's
 * path before its base, so the handler never sees a half-written entry as
 * live. */
#include "core/mapped.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

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
