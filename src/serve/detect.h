/* Language identification for "source": "auto" and POST /detect, with
 * libexttextcat's n-gram profiles (Cavnar and Trenkle's method), restricted
 * to the languages the server translates from. */
#ifndef TED_SERVE_DETECT_H
#define TED_SERVE_DETECT_H

#include <stddef.h>

#include "ted/ted.h"

typedef struct serve_detector serve_detector;

/* One language and how confident the detector is of it, 0 to 100. */
typedef struct serve_guess {
    const char *language;  /* one of the codes given to serve_detector_new */
    double confidence;
} serve_guess;

/* A detector among `count` ISO codes, each with its profile
 * (SERVE_PROFILES/CODE.lm, or CODE-Script.lm); codes without a profile
 * are left out. `*out` is NULL when none has one (no detection). */
ted_status serve_detector_new(const char *const *codes, int count, serve_detector **out,
                              ted_error *err);
void serve_detector_free(serve_detector *detector);

/* The languages the detector knows (the codes that have a profile). */
int serve_detector_languages(const serve_detector *detector);

/* Ranks the detector's languages for `text` (`length` bytes, UTF-8),
 * most likely first, into `guesses` (serve_detector_languages of them);
 * returns how many were written (0: out of memory). The confidences are
 * a softmax over the languages of how much of the text's n-gram profile
 * each language's profile matches. Thread-safe (one comparison at a time). */
int serve_detect(serve_detector *detector, const char *text, size_t length,
                 serve_guess *guesses);

#endif
