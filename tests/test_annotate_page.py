"""AppTest of the Annotate page, the session's identity and a team deployment's editors and viewers."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import annotations
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"
AUTH = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "test-cookie-secret",
        "client_id": "workbench", "client_secret": "secret",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}
TEAM = {"auth": AUTH, "workbench": {"editors": ["ana@example.org", "ben@example.org"],
                                    "viewers": ["vic@example.org"]}}


@pytest.fixture
def db(tmp_path, monkeypatch, tiny_dataset):
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    store = Store(path)
    store.save_dataset(tiny_dataset)
    for k, method in enumerate(("direct", "direct")):  # two judges that disagree: the queue's first items
        run_id = create_run(store, RunSpec(method=method, dataset="tiny", aspect="quality", train_size=0,
                                           test_size=12))
        answer = (lambda m, p: f"[[{1 + len(m[0]['content']) % 5}]]") if k == 0 else (lambda m, p: "[[3]]")
        execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(answer,
                                                                                              model_id=f"f{k}")))
    return path


def session(name: str | None = None, *, secrets: dict | None = None, user: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    if name:
        at.session_state["identity_name"] = name
    if secrets:
        at.secrets = secrets
    if user is not None:
        at.user = user
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def current_item(at: AppTest) -> str:
    text = next(m.value for m in at.markdown if m.value.startswith("**Item "))
    return text.removeprefix("**Item ").removesuffix("**").replace("\\", "")


def submit(at: AppTest, label: str):
    """The label form's button (the form is keyed by the item it labels, so that a double Enter labels it once)."""
    return next(b for b in at.button if b.key == f"FormSubmitter:annotate_form_{current_item(at)}-{label}")


def label(at: AppTest, value: float, note: str = "") -> None:
    at.number_input(key="annotate_value").set_value(value)
    at.text_input(key="annotate_note").set_value(note)
    submit(at, "Save").click().run()
    assert not at.exception, [e.value for e in at.exception]


def table(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def captions(at: AppTest) -> str:
    return " ".join(c.value.replace("\\", "") for c in at.caption)


def test_two_annotators_label_the_same_items_blind_and_agreement_comes_from_their_labels(db, tiny_dataset):
    store = Store(db)
    before = annotations.imported_digest(store.load_dataset("tiny"), store.annotations("tiny", source="imported"))
    ana, ben = session("ana"), session("ben")
    first = current_item(ana)
    assert current_item(ben) == first  # the same queue: where the judges disagree most
    label(ana, 4, "clear")
    ben.run()
    assert current_item(ben) == first
    assert "ana 4" not in captions(ben)  # blind: ben does not see ana's score before giving his
    label(ben, 5)
    assert "Others gave it: ana 4" in captions(ben)
    scores = {"ana": [4, 2, 5, 1, 3, 2], "ben": [5, 2, 4, 1, 3, 1]}
    for k in range(1, 6):
        for name, at in (("ana", ana), ("ben", ben)):
            label(at, scores[name][k])
    labels = store.annotations("tiny", aspect="quality")
    assert {a.annotator for a in labels} == {"ana", "ben"} and len(labels) == 12
    assert {a.sample for a in labels if a.annotator == "ana"} == {a.sample for a in labels if a.annotator == "ben"}
    ana.run()
    counts = table(ana, "items labelled")
    assert dict(zip(counts["annotator"], counts["items labelled"])) == {"ana": 6, "ben": 6}
    agreement = table(ana, "Krippendorff's alpha")
    expected = annotations.agreement(labels, "quality", sorted({a.sample for a in labels}), n_bootstrap=20)
    assert agreement["items (2+ labels)"].iloc[0] == 6
    assert agreement["Krippendorff's alpha"].iloc[0] == pytest.approx(expected.alpha)
    assert agreement["ceiling spearman"].iloc[0] == pytest.approx(expected.ceiling["spearman"])
    audit = table(ana, "who")
    assert set(audit["who"]) == {"ana", "ben"}
    after = annotations.imported_digest(store.load_dataset("tiny"), store.annotations("tiny", source="imported"))
    assert after == before and store.load_dataset("tiny") == tiny_dataset


def test_skip_and_the_choice_of_human_score_recorded_with_the_next_run(db):
    ana = session("ana")
    first = current_item(ana)
    submit(ana, "Skip").click().run()
    assert current_item(ana) != first
    label(ana, 2)
    ana.selectbox(key="annotate_aggregate").set_value("annotator:ana")
    ana.button(key="FormSubmitter:annotate_aggregate_form-Save choice").click().run()
    store = Store(db)
    assert store.human_aggregate("tiny") == "annotator:ana"
    assert store.audit_log(entity="human_aggregate")[0]["actor"] == "ana"
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=1),
                        actor="ana")
    ana.switch_page("pages/runs.py").run()
    assert not ana.exception
    runs = table(ana, "started by")
    row = runs[runs["run"] == run_id].iloc[0]
    assert (row["human score"], row["started by"]) == ("annotator:ana", "ana")


def test_a_display_name_is_asked_once_and_recorded(db, monkeypatch):
    from pages.ui import auth

    monkeypatch.delenv("JUDGE_WORKBENCH_USER", raising=False)
    monkeypatch.setattr(auth, "_login_name", lambda: "")  # no account name to start from: the form asks
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert at.text_input(key="identity_input").label.startswith("Your name")
    at.text_input(key="identity_input").set_value("Ana Lima")
    at.button(key="FormSubmitter:identity_form-Continue").click().run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception
    label(at, 3)
    assert [a.annotator for a in Store(db).annotations("tiny")] == ["Ana Lima"]


def test_team_deployment_editor_labels_and_viewer_is_refused(db):
    editor = session(secrets=TEAM, user={"is_logged_in": True, "email": "ana@example.org", "name": "Ana"})
    label(editor, 4)
    store = Store(db)
    assert [a.annotator for a in store.annotations("tiny")] == ["ana@example.org"]
    viewer = session(secrets=TEAM, user={"is_logged_in": True, "email": "vic@example.org"})
    label(viewer, 1)
    assert any("vic@example.org may view this workbench but not change it" in e.value for e in viewer.error)
    viewer.run()  # the refusal stopped that run; the page is drawn again in full
    viewer.selectbox(key="annotate_aggregate").set_value("mean")
    viewer.button(key="FormSubmitter:annotate_aggregate_form-Save choice").click().run()
    assert any("may view" in e.value for e in viewer.error)
    assert len(store.annotations("tiny")) == 1 and store.human_aggregate("tiny") == "imported"


def test_team_deployment_asks_to_sign_in_and_refuses_strangers(db):
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.secrets = TEAM
    at.user = {"is_logged_in": False}
    at.run()
    assert not at.exception
    assert at.button(key="identity_login").label == "Sign in"
    stranger = AppTest.from_file(str(APP), default_timeout=60)
    stranger.secrets = TEAM
    stranger.user = {"is_logged_in": True, "email": "eve@example.org"}
    stranger.run()
    assert any("not on this workbench's list" in e.value for e in stranger.error)


def test_a_viewer_cannot_change_an_aspect_definition_either(db, tiny_dataset):
    viewer = session(secrets=TEAM, user={"is_logged_in": True, "email": "vic@example.org"})
    viewer.switch_page("pages/datasets.py").run()
    viewer.text_area(key="datasets_def_tiny_quality").set_value("Whatever the viewer wants.")
    viewer.button(key="FormSubmitter:datasets_aspects_tiny-Save definitions").click().run()
    assert not viewer.exception
    assert any("may view this workbench but not change it" in e.value for e in viewer.error)
    store = Store(db)
    assert store.load_dataset("tiny").aspect("quality").definition == "How good it is."
    assert store.audit_log(entity="aspect") == []


def test_roles_come_from_the_allow_list_and_the_example_secrets_parse():
    import tomllib

    from pages.ui.auth import role_of

    allow = {"editors": ["Ana@Example.org"], "viewers": ["vic@example.org", "ana@example.org"]}
    assert role_of("ana@example.org", allow) == "editor"  # case does not matter; editor wins over viewer
    assert role_of("vic@example.org", allow) == "viewer"
    assert role_of("eve@example.org", allow) is None and role_of("", {"viewers": ["*"]}) is None
    assert role_of("eve@example.org", {"viewers": ["*"]}) == "viewer"
    example = tomllib.loads((APP.parent / ".streamlit" / "secrets.example.toml").read_text(encoding="utf-8"))
    assert set(example["auth"]) >= {"redirect_uri", "cookie_secret", "client_id", "client_secret",
                                    "server_metadata_url"}
    assert role_of(example["workbench"]["viewers"][0], example["workbench"]) == "viewer"


@pytest.mark.parametrize("page", ["pages/home.py", "pages/datasets.py", "pages/runs.py", "pages/compare.py",
                                  "pages/annotate.py", "pages/settings.py"])
def test_every_page_opens_for_a_viewer_without_writing(db, page):
    store = Store(db)
    before = (len(store.audit_log()), [r["version"] for r in store.list_runs()], len(store.annotations("tiny")))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.secrets = TEAM
    at.user = {"is_logged_in": True, "email": "vic@example.org"}
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert (len(store.audit_log()), [r["version"] for r in store.list_runs()], len(store.annotations("tiny"))) == before


def test_compare_shows_each_judge_beside_the_ceiling_of_the_labels_it_is_evaluated_on(tmp_path, monkeypatch,
                                                                                        tiny_dataset):
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    store = Store(path)
    store.save_dataset(tiny_dataset)
    ana = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, 4]
    ben = [1, 3, 3, 4, 4, 2, 2, 3, 5, 5, 1, 4]
    for k, s in enumerate(tiny_dataset.samples):
        store.add_annotation("tiny", s.id, "quality", ana[k], annotator="ana")
        store.add_annotation("tiny", s.id, "quality", ben[k], annotator="ben")
    store.set_human_aggregate("tiny", "mean", actor="ana")
    for k in range(2):
        run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0,
                                           test_size=12))
        answer = (lambda m, p: f"[[{1 + len(m[-1]['content']) % 5}]]") if k == 0 else (lambda m, p: "[[3]]")
        execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store,
                                                backend=FakeBackend(answer, model_id=f"f{k}")))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Human score: the mean of all annotators" in captions(at)
    frame = table(at, "human ceiling (spearman)")
    ids = [s.id for s in tiny_dataset.samples]
    expected = annotations.agreement(store.annotations("tiny"), "quality", ids, level="group",
                                     groups=[s.group_id for s in tiny_dataset.samples],
                                     systems=[s.system_id for s in tiny_dataset.samples], n_bootstrap=10)
    assert frame["human ceiling (spearman)"].tolist() == pytest.approx([expected.ceiling["spearman"]] * 2)
    assert "2 annotators on 12 items" in captions(at)


def test_the_name_defaults_to_the_account_and_a_changed_one_survives_a_reload(db, monkeypatch):
    from pages.ui import auth

    monkeypatch.delenv("JUDGE_WORKBENCH_USER", raising=False)
    monkeypatch.setattr(auth, "_login_name", lambda: "osuser")
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception and not [t for t in at.text_input if t.key == "identity_input"], "not asked"
    assert at.sidebar.text_input(key="identity_name").value == "osuser"
    at.sidebar.text_input(key="identity_name").set_value("Ana Lima").run()
    again = AppTest.from_file(str(APP), default_timeout=60).run()  # a reload: a new session
    assert again.sidebar.text_input(key="identity_name").value == "Ana Lima"
    again.switch_page("pages/annotate.py").run()
    label(again, 4)
    assert [a.annotator for a in Store(db).annotations("tiny")] == ["Ana Lima"]
