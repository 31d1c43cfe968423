/* Language identification with libexttextcat (serve/detect.h). */
#include "serve/detect.h"

#include <dirent.h>
#include <constants.h>
#include <fingerprint.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <textcat.h>

#include "ted/util.h"

#ifndef SERVE_PROFILES
#define SERVE_PROFILES "/usr/share/libexttextcat"
#endif

/* The n-grams of a text's profile, as libexttextcat's classifier takes them. */
enum { PROFILE_NGRAMS = MAXNGRAMS };

/* The softmax's temperature over the matched shares (0 to 1): a language
 * matching 0.1 more of the profile than another is e^2 times as likely. */
#define TEMPERATURE 0.05

struct serve_detector {
    int count;
    const char **codes;  /* (count) */
    void **profiles;     /* (count) fingerprints */
    void *empty;         /* a profile without n-grams: every n-gram of a text misses it */
    pthread_mutex_t lock;  /* one comparison at a time: libexttextcat does not say that
                            * its profiles may be read by two threads at once */
};

/* The profile file of `code` (`path`, `size` bytes): CODE.lm, else the
 * first CODE-Script.lm by name. False when there is none. */
static bool profile_path(const char *code, char *path, size_t size)
{
    snprintf(path, size, "%s/%s.lm", SERVE_PROFILES, code);
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return true;
    }
    DIR *dir = opendir(SERVE_PROFILES);
    size_t n = strlen(code);
    char best[256] = "";
    for (struct dirent *e; dir && (e = readdir(dir));) {
        size_t length = strlen(e->d_name);
        if (!strncmp(e->d_name, code, n) && e->d_name[n] == '-' && length < sizeof best &&
            length > 3 && !strcmp(e->d_name + length - 3, ".lm") &&
            (!best[0] || strcmp(e->d_name, best) < 0))
            strcpy(best, e->d_name);
    }
    if (dir)
        closedir(dir);
    snprintf(path, size, "%s/%s", SERVE_PROFILES, best);
    return best[0] != '\0';
}

static void *new_profile(const char *name)
{
    void *p = fp_Init(name);
    if (p)
        fp_SetProperty(p, TCPROP_UTF8AWARE, TC_TRUE);
    return p;
}

ted_status serve_detector_new(const char *const *codes, int count, serve_detector **out,
                              ted_error *err)
{
    *out = NULL;
    serve_detector *d = ted_alloc(1, sizeof *d, "detector", err);
    if (!d)
        return TED_ERR_NOMEM;
    *d = (serve_detector){0};
    pthread_mutex_init(&d->lock, NULL);
    d->codes = ted_alloc(count > 0 ? count : 1, sizeof *d->codes, "detector", err);
    d->profiles = ted_alloc(count > 0 ? count : 1, sizeof *d->profiles, "detector", err);
    d->empty = new_profile("empty");
    if (!d->codes || !d->profiles || !d->empty) {
        serve_detector_free(d);
        return ted_fail(err, TED_ERR_NOMEM, "out of memory loading the language profiles");
    }
    for (int i = 0; i < count; i++) {
        char path[512];
        void *p = profile_path(codes[i], path, sizeof path) ? new_profile(codes[i]) : NULL;
        if (p && fp_Read(p, path, PROFILE_NGRAMS)) {
            d->codes[d->count] = codes[i];
            d->profiles[d->count++] = p;
        } else if (p) {
            fp_Done(p);
        }
    }
    if (d->count == 0)
        serve_detector_free(d);
    else
        *out = d;
    return TED_OK;
}

void serve_detector_free(serve_detector *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->count; i++)
        fp_Done(d->profiles[i]);
    if (d->empty)
        fp_Done(d->empty);
    free(d->codes);
    free(d->profiles);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

int serve_detector_languages(const serve_detector *d)
{
    return d ? d->count : 0;
}

static int by_confidence(const void *a, const void *b)
{
    double x = ((const serve_guess *)a)->confidence, y = ((const serve_guess *)b)->confidence;
    return (x < y) - (x > y);
}

/* Each language's share of the text's profile matched (1 - its distance
 * over the distance of a profile that matches nothing), softmaxed. */
static void confidences(const serve_detector *d, void *text, serve_guess *guesses)
{
    double worst = (double)fp_Compare(d->empty, text, MAXSCORE), top = -INFINITY;
    double sum = 0.0;
    for (int i = 0; i < d->count; i++) {
        double distance = (double)fp_Compare(d->profiles[i], text, MAXSCORE);
        double share = worst > 0.0 ? 1.0 - distance / worst : 0.0;
        guesses[i] = (serve_guess){d->codes[i], share / TEMPERATURE};
        top = guesses[i].confidence > top ? guesses[i].confidence : top;
    }
    for (int i = 0; i < d->count; i++)
        sum += guesses[i].confidence = exp(guesses[i].confidence - top);
    for (int i = 0; i < d->count; i++)
        guesses[i].confidence = 100.0 * guesses[i].confidence / sum;
}

int serve_detect(serve_detector *d, const char *text, size_t length, serve_guess *guesses)
{
    void *profile = new_profile("text");
    if (!profile)
        return 0;
    if (fp_Create(profile, text, (uint4)(length > 1 << 20 ? 1 << 20 : length), PROFILE_NGRAMS)) {
        pthread_mutex_lock(&d->lock);
        confidences(d, profile, guesses);
        pthread_mutex_unlock(&d->lock);
        qsort(guesses, (size_t)d->count, sizeof *guesses, by_confidence);
    } else {  /* too short for a profile: every language alike */
        for (int i = 0; i < d->count; i++)
            guesses[i] = (serve_guess){d->codes[i], 100.0 / d->count};
    }
    fp_Done(profile);
    return d->count;
}
