/* src/document: the sentence splitter's edge cases (empty text, white
 * space only, no final punctuation, CRLF, abbreviations, invalid UTF-8, a
 * NUL byte), the rejoin of a text around its sentences, byte for byte, and
 * HTML: escaped translations, kept elements, a translator's failure. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "document/document.h"
#include "document/sentences.h"

/* The sentences of `text` as strings, joined by '|'. */
static char *split(const char *text)
{
    document_span *spans;
    int count;
    ted_error err = {0};
    cr_assert_eq(document_split_sentences(text, strlen(text), NULL, &spans, &count, &err), TED_OK,
                 "%s", err.message);
    char *out = calloc(strlen(text) + (size_t)count + 1, 1);
    cr_assert_not_null(out);
    for (int i = 0; i < count; i++) {
        if (i)
            strcat(out, "|");
        strncat(out, text + spans[i].start, spans[i].end - spans[i].start);
    }
    free(spans);
    return out;
}

static void expect_split(const char *text, const char *expected)
{
    char *got = split(text);
    cr_expect_str_eq(got, expected, "'%s': got '%s', expected '%s'", text, got, expected);
    free(got);
}

Test(sentences, empty_and_blank_texts_have_none)
{
    expect_split("", "");
    expect_split("   ", "");
    expect_split("\r\n\t \n", "");
    expect_split("\xc2\xa0\xe3\x80\x80", "");  /* no-break space, ideographic space */
}

Test(sentences, text_without_final_punctuation_is_one)
{
    expect_split("Hello world", "Hello world");
    expect_split("  Hello world  ", "Hello world");
    expect_split("One. Two", "One.|Two");
}

Test(sentences, line_breaks_end_sentences_crlf_included)
{
    expect_split("One.\r\nTwo.\r\n", "One.|Two.");
    expect_split("a line\r\nanother line", "a line|another line");
    expect_split("first\n\nsecond", "first|second");
}

Test(sentences, abbreviations_quotes_and_ellipses)
{
    expect_split("Dr. Smith came at 10 a.m. today. He left.", "Dr. Smith came at 10 a.m. today.|He left.");
    expect_split("Mr. Jones, e.g. the baker, came. It cost $3.50.",
                 "Mr. Jones, e.g. the baker, came.|It cost $3.50.");
    expect_split("He said \"Stop.\" and left. Then... nothing. Why?",
                 "He said \"Stop.\" and left.|Then... nothing.|Why?");
    expect_split("(Dr. Lee) \"Wait.\" Go.", "(Dr. Lee) \"Wait.\"|Go.");
}

Test(sentences, several_scripts)
{
    expect_split("你好。世界！ Привет. Как дела? नमस्ते। ठीक है।",
                 "你好。|世界！|Привет.|Как дела?|नमस्ते।|ठीक है।");
}

Test(sentences, invalid_utf8_and_nul_are_refused_naming_the_byte)
{
    document_span *spans = NULL;
    int count = 0;
    ted_error err = {0};
    cr_assert_eq(document_split_sentences("abc \xff def", 9, NULL, &spans, &count, &err),
                 TED_ERR_INPUT);
    cr_expect(strstr(err.message, "byte 4") && strstr(err.message, "UTF-8"), "%s", err.message);
    cr_expect_null(spans);
    cr_assert_eq(document_split_sentences("ab\xe2\x82", 4, NULL, &spans, &count, &err),
                 TED_ERR_INPUT);
    cr_expect(strstr(err.message, "byte 2"), "%s", err.message);
    cr_assert_eq(document_split_sentences("ab\0cd", 5, NULL, &spans, &count, &err), TED_ERR_INPUT);
    cr_expect(strstr(err.message, "byte 2: a NUL byte"), "%s", err.message);
}

/* Each sentence's translation is "[" sentence "]". */
static ted_status bracket(void *data, const char *const *sentences, int count, char **out,
                          ted_error *err)
{
    (void)err;
    *(int *)data = count;
    for (int i = 0; i < count; i++) {
        out[i] = malloc(strlen(sentences[i]) + 3);
        cr_assert_not_null(out[i]);
        strcpy(out[i], "[");
        strcat(out[i], sentences[i]);
        strcat(out[i], "]");
    }
    return TED_OK;
}

static char *translated(const char *text, document_format format, int *count)
{
    document_options o = {.format = format, .split_sentences = true};
    char *out = NULL;
    ted_error err = {0};
    cr_assert_eq(document_translate(text, strlen(text), &o, bracket, count, &out, &err), TED_OK,
                 "%s", err.message);
    return out;
}

Test(document, text_is_rebuilt_with_every_byte_between_sentences)
{
    int count = -1;
    char *out = translated(" \tOne.  Two?\r\n\r\nThree\xc2\xa0 ", DOCUMENT_TEXT, &count);
    cr_expect_str_eq(out, " \t[One.]  [Two?]\r\n\r\n[Three]\xc2\xa0 ");
    cr_expect_eq(count, 3);
    free(out);
    count = -1;
    out = translated(" \n ", DOCUMENT_TEXT, &count);
    cr_expect_str_eq(out, " \n ");
    cr_expect_eq(count, -1, "the translator is not called without sentences");
    free(out);
}

Test(document, html_translations_are_escaped_and_markup_kept)
{
    int count = 0;
    const char *page = "<!DOCTYPE html><p class='a>b'>Hi &amp; bye.<!-- c --> Next <b>one</b>.</p>"
                       "<script>var x = '<p>no</p>';</script><code>ls</code>"
                       "<p translate=\"no\">Keep.</p><pre>  as is </pre>";
    char *out = translated(page, DOCUMENT_HTML, &count);
    cr_expect_str_eq(out, "<!DOCTYPE html><p class='a>b'>[Hi &amp; bye.]<!-- c --> [Next one.]<b>"
                          "</b></p><script>var x = '<p>no</p>';</script><code>ls</code>"
                          "<p translate=\"no\">Keep.</p><pre>  as is </pre>");
    cr_expect_eq(count, 2);
    free(out);
}

static ted_status markup(void *data, const char *const *sentences, int count, char **out,
                         ted_error *err)
{
    (void)data;
    (void)sentences;
    (void)err;
    for (int i = 0; i < count; i++)
        out[i] = strdup("<img src=x onerror=alert(1)>&");
    return TED_OK;
}

Test(document, html_never_injects_markup)
{
    document_options o = {.format = DOCUMENT_HTML, .split_sentences = true};
    char *out = NULL;
    ted_error err = {0};
    const char *page = "<p>Hello.</p>";
    cr_assert_eq(document_translate(page, strlen(page), &o, markup, NULL, &out, &err), TED_OK);
    cr_expect_str_eq(out, "<p>&lt;img src=x onerror=alert(1)&gt;&amp;</p>");
    free(out);
}

/* The HTML5 tokenizer's comments, bogus comments, doctypes and CDATA:
 * markup byte for byte, never a sentence's text (the expected pages are
 * worked by hand from WHATWG HTML, "Tokenization"). */
Test(document, html_constructs_a_browser_reads_as_markup_stay_markup)
{
    static const char *const cases[][2] = {
        {"<p>A cat. <![CDATA[ <img src=x onerror=alert(1)> ]]> A dog.</p>",
         "<p>[A cat.] <![CDATA[ <img src=x onerror=alert(1)> ]]> [A dog.]</p>"},
        {"<p>A cat. <!ENTITY x \"<img src=x>\"> A dog.</p>",
         "<p>[A cat.] <!ENTITY x \"<img src=x>[\"&gt; A dog.]</p>"},
        {"<p>A cat. <!x <img src=x>> A dog.</p>", "<p>[A cat.] <!x <img src=x>[&gt; A dog.]</p>"},
        {"<div><p>A.</p><!DOCTYPE html></div></div><p>B.</p>",
         "<div><p>[A.]</p><!DOCTYPE html></div></div><p>[B.]</p>"},
        {"<p>A <?php echo 1 ?> cat.</p>", "<p>[A cat.]<?php echo 1 ?></p>"},
        {"<p>A <?= '<b>' ?> cat.</p>", "<p>[A ' ?]<?= '<b>[&gt; cat.]</p>"},
        {"<p>A</ x>cat.</p>", "<p>[Acat.]</ x></p>"},
        {"<p>A<!>cat<?>s</>.</p>", "<p>[Acats.]<!><?></></p>"},
        {"<p>A <!--> cat --> dog.</p>", "<p>[A cat --&gt; dog.]<!--></p>"},
        {"<p>A <!-- x --!> cat.</p>", "<p>[A cat.]<!-- x --!></p>"},
        {"<svg><![CDATA[ a > b ]]></svg><p>C.</p>", "<svg><![CDATA[ a > b ]]></svg><p>[C.]</p>"},
        {"<script><!--<script></script>A.</script><p>B.</p>",
         "<script><!--<script></script>A.</script><p>[B.]</p>"},
        {"<p>A.</p x=\"y>B.\">C.</p>", "<p>[A.]</p x=\"y>B.\">[C.]</p>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int count = 0;
        char *out = translated(cases[i][0], DOCUMENT_HTML, &count);
        cr_expect_str_eq(out, cases[i][1], "%s: got %s", cases[i][0], out);
        free(out);
    }
}

/* libxml2 ends <a "b="> at its first '>', where a browser reads a quoted
 * value on to the next '"' and the tag on to the '>' of </p>. */
Test(document, html_text_a_browser_reads_inside_a_tag_stays_as_it_is)
{
    int count = 0;
    const char *page = "<p><a \"b=\">Hello.\" The cat.</p><p>The dog.</p>";
    char *out = translated(page, DOCUMENT_HTML, &count);
    cr_expect_str_eq(out, "<p><a \"b=\">Hello.\" The cat.</p><p>[The dog.]</p>");
    cr_expect_eq(count, 1);
    free(out);
}

static ted_status refuse(void *data, const char *const *sentences, int count, char **out,
                         ted_error *err)
{
    (void)data;
    (void)sentences;
    (void)count;
    (void)out;
    err->status = TED_ERR_INPUT;
    strcpy(err->message, "the translator says no");
    return TED_ERR_INPUT;
}

Test(document, a_translators_failure_is_the_result)
{
    document_options o = {.format = DOCUMENT_TEXT, .split_sentences = true};
    char *out = (char *)1;
    ted_error err = {0};
    cr_assert_eq(document_translate("One. Two.", 9, &o, refuse, NULL, &out, &err), TED_ERR_INPUT);
    cr_expect_null(out);
    cr_expect_str_eq(err.message, "the translator says no");
}

Test(document, format_names)
{
    document_format f = DOCUMENT_TEXT;
    cr_expect(document_format_from_name("html", &f) && f == DOCUMENT_HTML);
    cr_expect(document_format_from_name("text", &f) && f == DOCUMENT_TEXT);
    cr_expect_not(document_format_from_name("HTML", &f));
    cr_expect_not(document_format_from_name("xml", &f));
}

Test(document, html_notranslate_is_a_class_of_its_own)
{
    int count = 0;
    char *out = translated("<p class=\"a notranslate\">Keep.</p><p class=\"notranslated\">Go."
                           "</p><div translate=\"no\"><p translate=\"yes\">Yes.</p>No.</div>",
                           DOCUMENT_HTML, &count);
    cr_expect_str_eq(out, "<p class=\"a notranslate\">Keep.</p><p class=\"notranslated\">[Go.]"
                          "</p><div translate=\"no\"><p translate=\"yes\">[Yes.]</p>No.</div>");
    cr_expect_eq(count, 2);
    free(out);
}

/* The sentences of `text` in `language`, joined by '|'. */
static char *split_in(const char *text, const char *language)
{
    document_span *spans;
    int count;
    ted_error err = {0};
    cr_assert_eq(document_split_sentences(text, strlen(text), language, &spans, &count, &err),
                 TED_OK, "%s: %s", language, err.message);
    char *out = calloc(strlen(text) + (size_t)count + 1, 1);
    cr_assert_not_null(out);
    for (int i = 0; i < count; i++) {
        if (i)
            strcat(out, "|");
        strncat(out, text + spans[i].start, spans[i].end - spans[i].start);
    }
    free(spans);
    return out;
}

Test(sentences, language_codes_as_models_spell_them)
{
    /* ICU's English abbreviations, reached from each spelling of English */
    const char *english[] = {"en", "eng", "eng_Latn", "en_XX", NULL, ""};
    for (size_t i = 0; i < sizeof english / sizeof *english; i++) {
        char *got = split_in("Mr. Jones came. Prof. Lee too.", english[i]);
        cr_expect_str_eq(got, "Mr. Jones came.|Prof. Lee too.", "%s: %s",
                         english[i] ? english[i] : "NULL", got);
        free(got);
    }
    /* a code is cut at a character it cannot hold: no ICU keyword gets through */
    char *got = split_in("One. Two.", "fr@ss=none;x");
    cr_expect_str_eq(got, "One.|Two.");
    free(got);
}
