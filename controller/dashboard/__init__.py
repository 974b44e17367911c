"""The pit dashboard's HTTP server: the page's files and its ``/config.json`` (``tablectl dashboard``, the demo)."""
