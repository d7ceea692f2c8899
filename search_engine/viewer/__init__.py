"""``memsearch ui``: a local web viewer over the same library functions as the CLI.

The memory holds text that other people and tools wrote (prompts, tool output, web pages an agent read), and the
browser that shows it also visits other sites. So the viewer is built to be safe against both:
:mod:`.security` guards every request (token, loopback Host, CSRF and Origin on POST, strict headers), the
templates escape every value, and nothing but the index and the package's own assets is served.

Nothing here is imported by ``memsearch --help``, searches or hooks: Starlette, uvicorn and Jinja2 are the
optional ``ui`` extra.
"""
