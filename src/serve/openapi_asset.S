/* docs/openapi.yaml, built into the program: its bytes between two
 * symbols (serve/server.c serves them at /openapi.yaml). The path is
 * relative to the repository's top, where make runs. */
        .section .rodata
        .balign 16

        .global serve_openapi_yaml
        .global serve_openapi_yaml_end
serve_openapi_yaml:
        .incbin "docs/openapi.yaml"
serve_openapi_yaml_end:

        .section .note.GNU-stack,"",%progbits
