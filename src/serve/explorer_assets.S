/* The explorer's page (src/serve/explorer/), built into the program:
 * each file's bytes between two symbols (serve/explore.c serves them).
 * The paths are relative to the repository's top, where make runs. */
        .section .rodata
        .balign 16

        .global serve_explorer_html
        .global serve_explorer_html_end
serve_explorer_html:
        .incbin "src/serve/explorer/index.html"
serve_explorer_html_end:

        .global serve_explorer_js
        .global serve_explorer_js_end
serve_explorer_js:
        .incbin "src/serve/explorer/explorer.js"
serve_explorer_js_end:

        .global serve_explorer_css
        .global serve_explorer_css_end
serve_explorer_css:
        .incbin "src/serve/explorer/explorer.css"
serve_explorer_css_end:

        .section .note.GNU-stack,"",%progbits
