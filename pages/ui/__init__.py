"""The pieces the pages share: session settings, sign-in, messages, readers, imports, tables, the trust panel.

Every module here is imported by page scripts; none is a page. The page
scripts stay in ``pages/`` beside this package because ``app.py`` routes to
them by path (``st.Page("pages/<name>.py")``) and the design names that folder.
Streamlit also auto-discovers the ``*.py`` files directly in ``pages/`` (its
legacy multipage listing, shown when a script run stops before
``st.navigation``): a subpackage is not listed there, so these modules are
neither offered to a visitor as pages nor mistaken for one by a reader.

Pages import the modules they use (``from pages.ui import messages, session``)
and call ``messages.escape_markdown(...)``; this package re-exports nothing.

* :mod:`.session` — the session's settings and their defaults, the database
  file and :class:`~judge_engine.store.Store`, the LLM configuration and API key;
* :mod:`.widgets` — widgets bound to session values, tabs that keep their place;
* :mod:`.app_frame` — running a page inside ``app.py``'s frame;
* :mod:`.auth` — sign-in: display name or OpenID Connect, editor and viewer roles, who saves;
* :mod:`.messages` — Markdown escaping and messages that survive a rerun;
* :mod:`.glossary` — what each figure the pages show means (help texts), and counts in words;
* :mod:`.rubric_flags` — the rubric checks' flags in words;
* :mod:`.readers` — cached readers of datasets and verdicts;
* :mod:`.uploads` — saving an uploaded file;
* :mod:`.table_import` — importing a user's table, its preview and column guesses;
* :mod:`.tables` — engine records as the DataFrames the pages display;
* :mod:`.trust` — the trust panel of a finished judge;
* :mod:`.start_form` — the start form every method page shares;
* :mod:`.run_view` — a method page's runs: picker, live progress, baselines, edit history.

Session keys start with ``settings_`` (backend and database settings),
``identity_``, or a page's own prefix (``datasets_``, ``runs_``, ...).
"""
