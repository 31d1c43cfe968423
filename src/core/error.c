#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ted_status_name(ted_status status)
{
    switch (status) {
    case TED_OK: return "ok";
    case TED_ERR_IO: return "I/O error";
    case TED_ERR_FORMAT: return "malformed file";
    case TED_ERR_CONFIG: return "invalid config";
    case TED_ERR_WEIGHTS: return "invalid weights";
    case TED_ERR_VOCAB: return "invalid vocabulary";
    case TED_ERR_INPUT: return "invalid input";
    case TED_ERR_NOMEM: return "out of memory";
    case TED_ERR_ARGUMENT: return "invalid argument";
    case TED_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

ted_status ted_fail(ted_error *err, ted_status status, const char *format, ...)
{
    if (err) {
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
        err->status = status;
        err->option = TED_OPTION_NONE;
    }
    return status;
}

ted_status ted_fail_option(ted_error *err, ted_option option, const char *format, ...)
{
    if (err) {
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
        err->status = TED_ERR_ARGUMENT;
        err->option = option;
    }
    return TED_ERR_ARGUMENT;
}

ted_status ted_fail_context(ted_error *err, const char *format, ...)
{
    if (!err)
        return TED_ERR_ARGUMENT;
    char message[TED_ERROR_MESSAGE_SIZE];
    memcpy(message, err->message, sizeof message);
    va_list args;
    va_start(args, format);
    int n = vsnprintf(err->message, sizeof err->message, format, args);
    va_end(args);
    if (n >= 0 && (size_t)n < sizeof err->message)
        snprintf(err->message + n, sizeof err->message - n, ": %.*s",
                 (int)(sizeof err->message - n), message);
    return err->status;
}
