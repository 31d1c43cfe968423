#include "frontend/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

#include "ted/util.h"

enum { MAX_LINKS = 40 };  /* as Linux's limit on links followed by one open() */

/* Records why `path` cannot be written, in `err` and in o->error. */
static ted_status cannot_write(frontend_output *o, const char *path, int error, ted_error *err)
{
    o->error = error ? error : EIO;
    return ted_fail(err, o->error == ENOMEM ? TED_ERR_NOMEM : TED_ERR_IO, "cannot write %s: %s",
                    path, strerror(o->error));
}

/* `name` without its last component: "." for a bare name. */
static char *directory_of(const char *name)
{
    const char *slash = strrchr(name, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == name ? 1 : (size_t)(slash - name);
    char *dir = malloc(n + 1);
    if (dir) {
        memcpy(dir, name, n);
        dir[n] = '\0';
    }
    return dir;
}

/* True when the link `name` lives in /proc, where /dev/stdout and /dev/fd/N
 * lead: such a link names an open descriptor, and its text ("pipe:[1234]",
 * or the name a file had when it was opened) is no path to follow. */
static bool names_a_descriptor(const char *name)
{
#ifdef __linux__
    enum { PROC_FILESYSTEM = 0x9fa0 };  /* PROC_SUPER_MAGIC of <linux/magic.h> */
    char *dir = directory_of(name);
    struct statfs fs;
    bool in_proc = dir && statfs(dir, &fs) == 0 && fs.f_type == PROC_FILESYSTEM;
    free(dir);
    return in_proc;
#else
    (void)name;
    return false;
#endif
}

/* The name the symbolic link `name` points to, relative to the link's own
 * directory when the link's text is relative (malloc'ed; NULL: errno). */
static char *link_target(const char *name)
{
    char text[PATH_MAX];
    ssize_t n = readlink(name, text, sizeof text);
    if (n < 0)
        return NULL;
    if ((size_t)n >= sizeof text) {  /* the link's text may be cut: follow nothing */
        errno = ENAMETOOLONG;
        return NULL;
    }
    text[n] = '\0';
    if (text[0] == '/')
        return strdup(text);
    char *dir = directory_of(name);
    char *joined = dir ? malloc(strlen(dir) + (size_t)n + 2) : NULL;
    if (joined)
        sprintf(joined, "%s/%s", dir, text);
    free(dir);
    return joined;
}

/* Follows the symbolic links `path` ends in, as open() would, to the name
 * of the file they lead to (*target, malloc'ed; it may not exist yet).
 * *descriptor is set when a link names an open descriptor instead. */
static ted_status follow_links(frontend_output *o, const char *path, char **target,
                               bool *descriptor, ted_error *err)
{
    char *name = strdup(path);
    *descriptor = false;
    for (int hop = 0; name; hop++) {
        struct stat info;
        if (lstat(name, &info) != 0 || !S_ISLNK(info.st_mode) ||
            (*descriptor = names_a_descriptor(name))) {
            *target = name;
            return TED_OK;
        }
        if (hop == MAX_LINKS) {
            free(name);
            return cannot_write(o, path, ELOOP, err);
        }
        char *next = link_target(name);
        int error = errno;
        free(name);
        if (!next)
            return cannot_write(o, path, error, err);
        name = next;
    }
    return cannot_write(o, path, ENOMEM, err);
}

/* A device, a FIFO, a terminal or an open descriptor's name: written as it
 * is, appending (what was written there before stays). */
static ted_status open_directly(frontend_output *o, const char *path, ted_error *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 || !(o->file = fdopen(fd, "w"))) {
        int error = errno;
        if (fd >= 0)
            close(fd);
        return cannot_write(o, path, error, err);
    }
    return TED_OK;
}

/* The temporary file's permissions: those of the file it replaces (`old`),
 * with its owner and group where this process may give them; a new file's
 * 0666 less the umask. Bits that would grant more than the old file did are
 * dropped: set-id bits when the owner changes, the group's when the group
 * does. */
static int give_permissions(int fd, const struct stat *old)
{
    if (!old) {
        mode_t mask = umask(0);
        umask(mask);
        return fchmod(fd, 0666 & ~mask);
    }
    mode_t mode = old->st_mode & 07777;
    if (fchown(fd, old->st_uid, old->st_gid) != 0) {
        mode &= 0777;
        if (fchown(fd, (uid_t)-1, old->st_gid) != 0)
            mode &= ~(mode_t)070;
    }
    return fchmod(fd, mode);
}

/* A regular file, or a new one: written to "TARGET.XXXXXX" next to it. */
static ted_status open_temporary(frontend_output *o, const char *path, const struct stat *old,
                                 ted_error *err)
{
    size_t n = strlen(o->target);
    if (!(o->temp = malloc(n + 8)))
        return cannot_write(o, path, ENOMEM, err);
    memcpy(o->temp, o->target, n);
    memcpy(o->temp + n, ".XXXXXX", 8);
    int fd = mkstemp(o->temp);
    if (fd < 0) {
        int error = errno;
        free(o->temp);
        o->temp = NULL;
        return cannot_write(o, path, error, err);
    }
    if (give_permissions(fd, old) != 0 || !(o->file = fdopen(fd, "w"))) {
        int error = errno;
        close(fd);
        unlink(o->temp);
        free(o->temp);
        o->temp = NULL;
        return cannot_write(o, path, error, err);
    }
    return TED_OK;
}

ted_status frontend_output_open(frontend_output *o, const char *path, ted_error *err)
{
    *o = (frontend_output){0};
    bool descriptor;
    ted_status status = follow_links(o, path, &o->target, &descriptor, err);
    if (status != TED_OK)
        return status;
    struct stat info;
    bool exists = stat(path, &info) == 0;
    int error = errno;
    if (descriptor || (exists && !S_ISREG(info.st_mode)))
        status = open_directly(o, path, err);
    else if (!exists && error != ENOENT)
        status = cannot_write(o, path, error, err);
    else if (exists && access(o->target, W_OK) != 0)
        status = cannot_write(o, path, errno, err);
    else
        status = open_temporary(o, path, exists ? &info : NULL, err);
    if (status != TED_OK) {
        free(o->target);
        o->target = NULL;
    }
    return status;
}

ted_status frontend_output_close(frontend_output *o, const char *path, bool keep,
                                 ted_error *err)
{
    ted_status status = TED_OK;
    if (o->file) {
        errno = 0;
        bool failed = fflush(o->file) != 0 || ferror(o->file);
        int error = errno;
        if (keep && !failed && o->temp && fsync(fileno(o->file)) != 0) {
            failed = true;
            error = errno;
        }
        if (fclose(o->file) != 0 && !failed) {
            failed = true;
            error = errno;
        }
        if (keep && failed)
            status = cannot_write(o, path, error, err);
    }
    if (o->temp && keep && status == TED_OK && rename(o->temp, o->target) != 0)
        status = cannot_write(o, path, errno, err);
    if (o->temp && (!keep || status != TED_OK))
        unlink(o->temp);
    free(o->temp);
    free(o->target);
    int error = o->error;
    *o = (frontend_output){.error = error};
    return status;
}

ted_status frontend_output_check(const char *path, const char *const *inputs, int count,
                                 const char *replace_option, bool replace, ted_error *err)
{
    struct stat info;
    if (stat(path, &info) != 0)
        return TED_OK;  /* a new file; frontend_output_open says why one cannot be made */
    for (int i = 0; i < count; i++)
        if (inputs[i] && ted_same_file(path, inputs[i]))
            return ted_fail(err, TED_ERR_ARGUMENT,
                            "%s is the input %s: the output must be another file", path,
                            inputs[i]);
    if (S_ISDIR(info.st_mode))
        return ted_fail(err, TED_ERR_ARGUMENT, "%s is a directory: the output is a file",
                        path);
    if (S_ISREG(info.st_mode) && !replace)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s exists: give a new file, or %s to replace it", path,
                        replace_option);
    return TED_OK;
}
