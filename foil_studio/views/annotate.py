"""An annotator's queue: instructions first, one item at a time, keys for every choice.

Only the signed-in annotator's own assignments are reachable here; a refresh resumes at the
first unanswered item. Every answer button is bound (by its key and its callback) to the item it
was drawn for, so a click or key press lands on that item or nowhere: a double press, a second
tab, or an item reassigned after the lease ran out store nothing elsewhere, and the annotator is
told what happened.
"""

import json
from typing import Any

import streamlit as st

from foil_studio.annotate import batches, crowd_studies, queues
from foil_studio.annotate.task_types import Task, TaskError, is_correct, task_type
from foil_studio.data import store
from foil_studio.views import text
from foil_studio.views.session import session_db
from foil_studio.views.stimulus import show_stimulus, shown_key

# A compact page, so the answers stay above the fold (the item's images are capped in views/stimulus.py).
IMAGE_CSS = """<style>
[data-testid="stMainBlockContainer"] {padding-top: 1.5rem; padding-bottom: 1rem;}
[data-testid="stMainBlockContainer"] h1 {font-size: 1.6rem; padding: 0.2rem 0;}
[data-testid="stMainBlockContainer"] h3 {font-size: 1.25rem; padding: 0.1rem 0;}
</style>"""

# The keyboard, as people use it (a static script, no user data):
# - a key held down repeats its keydown ~30 times a second; Streamlit's shortcuts would press the
#   button each time: auto-repeats are dropped before they reach it;
# - Enter or Escape in the comment field ends the comment (the field loses focus), so the next
#   digit answers instead of going into the comment;
# - questions answered with radios (rank, compare): digits 1-9 choose an option of the first
#   question still open, so each question has keys; Ctrl+Enter submits;
# - a batch chosen from the dropdown leaves it, so that Enter presses Start.
KEYBOARD = """<script>
if (!window.__foilKeyboard) {
  window.__foilKeyboard = true;
  const rest = () => { if (document.activeElement) document.activeElement.blur(); };
  // Enter commits the comment and reruns the page, whose redraw gives the field its focus back:
  // the focus leaves again once that run has finished.
  let leaveComment = false;
  new MutationObserver(() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (leaveComment && app && app.getAttribute("data-test-script-state") === "notRunning") { leaveComment = false; setTimeout(rest, 0); }
  }).observe(document.body, {attributes: true, subtree: true, attributeFilter: ["data-test-script-state"]});
  const typing = (el) => el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && !["radio", "checkbox"].includes(el.type)));
  window.addEventListener("keydown", (event) => {
    if (event.repeat) { event.stopImmediatePropagation(); event.preventDefault(); return; }
    const active = document.activeElement;
    if (typing(active) && (event.key === "Enter" || event.key === "Escape") && active.closest('[data-testid="stTextInput"]')) {
      leaveComment = true;
      setTimeout(rest, 0);  // after Streamlit has taken the value
      return;
    }
    if (typing(active) || event.ctrlKey || event.metaKey || event.altKey || !/^[1-9]$/.test(event.key)) return;
    const form = document.querySelector('[data-testid="stForm"]');
    if (!form) return;
    const open = [...form.querySelectorAll('[role="radiogroup"]')].find((group) => !group.querySelector("input:checked"));
    const option = open && open.querySelectorAll("label")[Number(event.key) - 1];
    if (option) { option.click(); rest(); event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);
  document.addEventListener("click", (event) => {
    if (event.target.closest('[role="option"]')) setTimeout(rest, 50);
  }, true);
}
</script>"""  # noqa: E501

role = st.session_state["role"]
db = session_db()
st.html(IMAGE_CSS)
st.html(KEYBOARD, unsafe_allow_javascript=True)
crowd_session = "crowd" in st.session_state  # joined through a study link: the participant id stays off the screen
st.title("Welcome" if crowd_session else f"Welcome, {text.md(role.name)}")

# a crowd participant whose every unit went back to the pool holds no assignment, but still their study
mine = store.annotator_batches(db, role.annotator_id) or store.joined_studies(db, role.annotator_id)
if not mine:
    st.info("Nothing is assigned to you yet. Come back to this link when the study owner says so.")
    st.stop()
progress_of = {b["name"]: b for b in mine}


def batch_label(name: str) -> str:
    """What an annotator reads for a batch: its number and task (not the internal name). No counts:
    the browser hands back the label chosen, so a label that changes with each answer would send
    the next key press to the first batch."""
    number = list(progress_of).index(name) + 1
    return f"Batch {number}: {progress_of[name]['task_type'].replace('_', ' ')}"


def batch_progress() -> str:
    """Every batch's own progress, beside the menu."""
    return " · ".join(
        f"{batch_label(name)}, {row['done'] or 0} of {row['assigned']} done" for name, row in progress_of.items()
    )


if len(mine) > 1:
    if st.session_state.get("batch") not in progress_of:
        st.session_state.pop("batch", None)  # a batch no longer held (returned, deleted): back to the first
    batch_name = st.selectbox("Batch", list(progress_of), key="batch", format_func=batch_label)
    st.caption(batch_progress())
else:
    batch_name = mine[0]["name"]
queues.reassign_stale(db, batch_name)  # frees items others walked away from (its own short write)
state = queues.queue_state(db, role.annotator_id, batch_name)  # reads only: no lease starts here
crowd = "crowd_token" in state.batch["config"]


def show_notice() -> None:
    """What happened to the last answer (stored, already stored, refused), until the next one:
    the rerun the browser causes when it reports the item shown must not wipe a refusal away."""
    notice = st.session_state.get("notice")
    if notice and notice[0] == batch_name:  # never carried over to another batch's item
        _, level, message = notice
        {"success": st.success, "info": st.info, "error": st.error}[level](message)


def tell(level: str, message: str) -> None:
    """Keep what happened to the last answer ("success", "info" or "error"), for this batch's page only."""
    st.session_state["notice"] = (batch_name, level, message)


def return_study() -> None:
    freed = crowd_studies.return_study(db, batch_name, role.annotator_id)
    went_back = f"; {freed} item{'s' if freed != 1 else ''} went back to the pool" if freed else ""
    tell("info", f"You returned the study{went_back}.")  # during the practice questions none had been dealt


def return_button() -> None:
    """Prolific's "return": give the study back (open items go to others now, no code)."""
    st.button(
        "Return this study",
        key="return_study",
        on_click=return_study,
        help="Stop here without a completion code; your unanswered items go to other participants at once.",
    )


if crowd and store.has_returned(db, state.batch["id"], role.annotator_id):
    show_notice()
    st.info("You returned this study. Thank you for your time; you may close this tab.")
    st.stop()

if crowd and not st.session_state.get(f"consent:{batch_name}") and state.done == 0:
    st.subheader("Consent")
    st.text(state.batch["config"].get("consent", batches.DEFAULT_CONSENT))
    # a form: ticking the box by keyboard reruns nothing, so the focus stays on it (then Tab, Enter)
    with st.form("consent_form", border=False):
        agreed = st.checkbox("I agree to take part", key="consent_box")
        go = st.form_submit_button("Continue", key="consent", type="primary")
    if go and agreed:
        st.session_state[f"consent:{batch_name}"] = True
        st.rerun()
    if go:
        st.warning('Tick "I agree to take part" first, or close this tab to leave the study.')
    st.stop()

if not st.session_state.get(f"read:{batch_name}") and state.done == 0 and state.started_at is None:
    st.subheader("Instructions")
    st.text(state.batch["config"]["instructions"])
    if st.button("Start", key="start", shortcut="Enter", type="primary"):
        st.session_state[f"read:{batch_name}"] = True
        st.rerun()
    st.stop()

practice = crowd_studies.practice_tasks(db, state.batch, role.annotator_id) if crowd and state.done == 0 else []
step = st.session_state.get(f"practice:{batch_name}", 0)
item: dict[str, Any] | None = None
if step < len(practice):
    task, item = practice[step]
else:
    state = queues.draw(db, role.annotator_id, batch_name)  # the item goes on screen: lease and timer start now
    task = state.task

show_notice()
if item is not None:
    st.caption(f"Practice question {step + 1} of {len(practice)}: not counted")
else:
    # a crowd participant is dealt a few items at a time: progress counts against all they are to answer
    total = (store.crowd_quota(db, state.batch["id"], role.annotator_id) or state.assigned) if crowd else state.assigned
    st.progress(min(1.0, state.done / max(total, 1)), text=f"{state.done} of {total} done")
if task is None:
    # a completion code is what a crowd platform asks for, and only for complete work (a returned
    # study stopped above)
    if crowd:
        finish = crowd_studies.finish_crowd(db, batch_name, role.annotator_id)
        if finish.dealt:
            tell("info", finish.sentence())
            st.rerun()
        (st.success if finish.code and finish.passed else st.warning)(finish.sentence())
        if finish.completion_url:
            st.link_button("Complete the study on Prolific", finish.completion_url, type="primary")
            # Prolific's convention: the finished participant is sent to its completion URL (after a moment
            # to read the code)
            target = json.dumps(finish.completion_url).replace("<", "\\u003c")  # a JS string that cannot end the script
            st.html(
                f"<script>setTimeout(() => {{ window.location.href = {target}; }}, 4000);</script>",
                unsafe_allow_javascript=True,
            )
        else:
            return_button()
        st.stop()
    waiting = queues.batches_waiting(mine, batch_name)
    if not waiting:
        st.success("All done, thank you. You may close this tab.")
        st.stop()
    st.success(
        f"This batch is done, thank you. {len(waiting)} more {'batch waits' if len(waiting) == 1 else 'batches wait'} "
        "for you."
    )

    def go_to(name: str) -> None:
        st.session_state["batch"] = name

    st.button(
        f"Next: {batch_label(waiting[0])}",
        key="next_batch",
        type="primary",
        shortcut="Enter",
        on_click=go_to,
        args=(waiting[0],),
    )
    st.stop()


def widget_key(task: Task) -> str:
    """Every widget of an item carries the item: a press meant for one never reaches another."""
    return f"{batch_name}:{task.item_id}:{task.part}"


def record(task: Task, answer: dict[str, Any], practice_item: dict[str, Any] | None) -> None:
    """Button callback: runs before the page is drawn again, with the task the button was drawn for."""
    if practice_item is not None:  # practice: feedback, nothing stored
        right = is_correct(task.type, practice_item, task.part, answer)
        st.session_state[f"practice:{batch_name}"] = step + 1
        tell(
            "info",
            "Practice feedback: "
            + ("Correct." if right else "Not quite: look again at every detail the text mentions."),
        )
        return
    key = widget_key(task)
    flags, comment = st.session_state.get(f"flags:{key}") or [], st.session_state.get(f"comment:{key}", "")
    try:
        fresh = queues.submit_answer(  # the batch's reading time applies, counted from the whole item on screen
            db,
            role.annotator_id,
            batch_name,
            task,
            answer,
            flags=list(flags),
            comment=comment,
            require_shown=True,
        )
    except (TaskError, store.StoreError) as error:
        tell("error", f"Not stored. {error}")
        if isinstance(error, store.LabelRefused) and error.reason == "not_shown":
            # the browser's report that the item is on screen never arrived: ask it again
            st.session_state["report_again"] = st.session_state.get("report_again", 0) + 1
        return
    if fresh:
        tell("success", "Saved.")
    else:
        tell("info", "That item was already answered (a second press, or another tab): nothing was stored twice.")


def record_form(task: Task, labels_to_values: dict[str, str], practice_item: dict[str, Any] | None) -> None:
    """Form callback: the radios' choices for the item the form was drawn for."""
    key = widget_key(task)
    chosen = {q: labels_to_values.get(st.session_state.get(f"{q}:{key}")) for q in task.questions}
    record(task, chosen, practice_item)


def shown() -> None:
    """The browser reports the whole item on screen (every caption and image): its reading clock starts now."""
    key = shown_key()
    if key:
        item_id, part = map(int, key.split(":"))
        queues.mark_shown(db, role.annotator_id, batch_name, item_id, part)  # a practice item matches no assignment


def draw_stimulus(task: Task) -> None:
    """Captions and images as one block that appears whole (the next items' images decoded ahead)."""
    ahead = queues.upcoming_images(db, role.annotator_id, batch_name) if item is None else []
    show_stimulus(
        task,
        queues.task_images(db, state.batch, task),
        ahead,
        on_shown=shown,
        again=st.session_state.get("report_again", 0),
    )


def draw_answers(task: Task) -> None:
    """The answer buttons (fixed per task type, each with its key), then flags and a comment."""
    key = widget_key(task)
    if task.questions == ("answer",):
        for column, option in zip(st.columns(len(task.options)), task.options):
            column.button(
                option.label,
                key=f"option:{option.shortcut}:{key}",
                shortcut=option.shortcut or None,
                width="stretch",
                on_click=record,
                args=(task, {"answer": option.value}, item),
            )
    else:
        with st.form(key=f"form:{key}", border=False):
            values = {o.label: o.value for o in task.options}
            # the questions side by side: stacked, three rankings pushed Submit below a 720-pixel screen
            for column, q, label in zip(st.columns(len(task.questions)), task.questions, task.question_labels):
                column.radio(label, list(values), horizontal=True, key=f"{q}:{key}", index=None)
            st.form_submit_button(
                "Submit", shortcut="Ctrl+Enter", type="primary", on_click=record_form, args=(task, values, item)
            )
        st.caption(f"Keys: 1-{len(task.options)} answer each question in turn, Ctrl+Enter submits.")
    flags, comment = st.columns(2)
    flags.pills("Flags (optional)", list(task_type(task.type).flags), selection_mode="multi", key=f"flags:{key}")
    comment.text_input(
        "Comment (optional)", key=f"comment:{key}", help="Enter ends the comment; the keys answer again after it."
    )


st.subheader(task.prompt)
draw_stimulus(task)
draw_answers(task)
with st.expander("Instructions"):
    st.text(state.batch["config"]["instructions"])
if crowd:  # the practice questions too: a participant may leave before the first counted one
    return_button()
