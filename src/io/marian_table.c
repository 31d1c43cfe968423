/* The table of a Marian model file's tensors (io/marian_table.h). */
#include "io/marian_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/mapped.h"

static int compare_by_name(const void *a, const void *b)
{
    return strcmp(((const ted_marian_tensor *)a)->st.name,
                  ((const ted_marian_tensor *)b)->st.name);
}

/* Copies the text of the config item: its bytes up to the first NUL, with
 * nothing but NULs after it (Marian reads the item as a C string). */
static ted_status copy_yml(ted_marian_file *file, const ted_marian_tensor *item,
                           const char *file_name, ted_error *err)
{
    if (item->st.dtype != TED_DTYPE_I8 && item->st.dtype != TED_DTYPE_U8)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: item '%s' is of %s, not the bytes of a YAML text (int8)", file_name,
                        item->st.name, ted_dtype_name(item->st.dtype));
    const char *text = item->st.data;
    size_t size = item->st.bytes;
    const char *nul = size ? memchr(text, '\0', size) : NULL;
    size_t length = nul ? (size_t)(nul - text) : size;
    for (size_t i = length; i < size; i++)
        if (text[i] != '\0')
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: item '%s' holds a NUL byte inside its text (at byte %zu of "
                            "%zu)",
                            file_name, item->st.name, length, size);
    file->yml = ted_alloc(length + 1, 1, "the model's YAML config", err);
    if (!file->yml)
        return TED_ERR_NOMEM;
    memcpy(file->yml, text, length);
    file->yml_length = length;
    return TED_OK;
}

static ted_status check_and_copy_yml(ted_marian_file *file, const char *file_name,
                                     ted_error *err)
{
    if (file->count > 1)
        qsort(file->tensors, (size_t)file->count, sizeof *file->tensors, compare_by_name);
    for (int i = 1; i < file->count; i++)
        if (strcmp(file->tensors[i - 1].st.name, file->tensors[i].st.name) == 0)
            return ted_fail(err, TED_ERR_FORMAT, "%s: item '%s' is given twice", file_name,
                            file->tensors[i].st.name);
    const ted_marian_tensor *yml = ted_marian_find(file, TED_MARIAN_YML_NAME);
    return yml ? copy_yml(file, yml, file_name, err) : TED_OK;
}

ted_status ted_marian_table_finish(ted_marian_file *file, ted_status status,
                                   const char *file_name, ted_error *err)
{
    if (status == TED_OK)
        status = check_and_copy_yml(file, file_name, err);
    if (status != TED_OK)
        ted_marian_close(file);
    return status;
}

static int compare_name_to_tensor(const void *key, const void *element)
{
    return strcmp(key, ((const ted_marian_tensor *)element)->st.name);
}

const ted_marian_tensor *ted_marian_find(const ted_marian_file *file, const char *name)
{
    if (!file || !name || file->count <= 0)
        return NULL;
    return bsearch(name, file->tensors, (size_t)file->count, sizeof *file->tensors,
                   compare_name_to_tensor);
}

const char *ted_marian_yml(const ted_marian_file *file, size_t *length)
{
    if (length)
        *length = file && file->yml ? file->yml_length : 0;
    return file ? file->yml : NULL;
}

void ted_marian_close(ted_marian_file *file)
{
    if (!file)
        return;
    for (int i = 0; i < file->count; i++)
        free(file->tensors[i].st.name);
    free(file->tensors);
    free(file->yml);
    if (file->mapped)
        ted_unmap_file(file->bytes, file->size);
    memset(file, 0, sizeof *file);
}
