"""The web status page (``catalogd serve --web-bind``): what an operator opens first.

Server-rendered HTML that works without JavaScript, plus JSON probes:

* :mod:`catalogd.web.reads`: bounded catalog reads, run on the server thread (pure);
* :mod:`catalogd.web.views` and :mod:`catalogd.web.pages`: view functions, reads and
  status in, template contexts out (pure; unit-tested over an in-memory catalog);
* :mod:`catalogd.web.census`: the largest tables, counted in the background;
* :mod:`catalogd.web.access`: tokens and roles;
* :mod:`catalogd.web.app`: Starlette routes and Jinja2 templates (``templates/``);
* :mod:`catalogd.web.sources`: the adapter to the running daemon (bounded reads,
  cached status);
* :mod:`catalogd.web.server`: uvicorn on its own thread;
* :mod:`catalogd.web.daemon`: how ``catalogd serve`` starts it.

Pages never slow the server thread: each catalog read is one small job (a page of
keys, never a copy of a big table), at most a few at a time from all clients.
"""
