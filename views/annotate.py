"""An annotator's queue: instructions first, one item at a time, keys for every choice.

Only the signed-in annotator's own assignments are reachable here; a refresh resumes at the
first unanswered item, and a second click on an answer stores nothing twice.
"""

import streamlit as st

from annotate import batches, store
from annotate.tasks import TaskError, is_correct
from data import paths

role = st.session_state["role"]
db = store.open_db(paths.db_path())
st.title(f"Welcome, {role.name}")

mine = store.annotator_batches(db, role.annotator_id)
if not mine:
    st.info("Nothing is assigned to you yet. Come back to this link when the study owner says so.")
    st.stop()
batch_name = st.selectbox("Batch", [b["name"] for b in mine], key="batch") if len(mine) > 1 else mine[0]["name"]
state = batches.queue_state(db, role.annotator_id, batch_name)
crowd = "crowd_token" in state.batch["config"]

if crowd and not st.session_state.get(f"consent:{batch_name}") and state.done == 0:
    st.subheader("Consent")
    st.text(
        "This study asks you to judge images and captions. Your answers are stored with your\n"
        "participant id and used for research on vision-language benchmarks. You may stop at any time."
    )
    agreed = st.checkbox("I agree to take part", key="consent_box")
    if st.button("Continue", key="consent", type="primary", disabled=not agreed):
        st.session_state[f"consent:{batch_name}"] = True
        st.rerun()
    st.stop()

if not st.session_state.get(f"read:{batch_name}") and state.done == 0:
    st.subheader("Instructions")
    st.text(state.batch["config"]["instructions"])
    if st.button("Start", key="start", shortcut="Enter", type="primary"):
        st.session_state[f"read:{batch_name}"] = True
        st.rerun()
    st.stop()

practice = batches.practice_tasks(db, state.batch, role.annotator_id) if crowd and state.done == 0 else []
step = st.session_state.get(f"practice:{batch_name}", 0)
if step < len(practice):
    task, item = practice[step]
    st.caption(f"Practice question {step + 1} of {len(practice)}: not counted")
else:
    task, item = state.task, None

with st.expander("Instructions"):
    st.text(state.batch["config"]["instructions"])
if item is None:
    st.progress(state.done / state.assigned, text=f"{state.done} of {state.assigned} done")
if task is None:
    code, passed = batches.final_code(db, state.batch, role.name)
    if passed:
        st.success(f"All done, thank you. Your completion code: {code}")
    else:
        st.warning(f"Thank you. Some attention checks were missed; your code: {code}")
    st.stop()

if feedback := st.session_state.pop("feedback", None):
    st.info(f"Practice feedback: {feedback}")
st.subheader(task.prompt)
images = batches.task_images(db, state.batch, task)
if images:
    for column, (label, path) in zip(st.columns(len(images)), images):
        if path is None:
            column.warning(f"{label}: image missing or unreadable")
        else:
            column.image(str(path), caption=label, width="stretch")
for role_name, caption in task.captions:
    st.text(f"{role_name}: {caption}")  # plain text, never markup

flag_options = ["ambiguous", *task.extra.get("flags", ())]
key = f"{batch_name}:{task.item_id}:{task.part}"
flags = st.pills("Flags", flag_options, selection_mode="multi", key=f"flags:{key}")
comment = st.text_input("Comment (optional)", key=f"comment:{key}")


def record(answer: dict) -> None:
    if item is not None:  # practice: feedback, nothing stored
        right = is_correct(task.type, item, task.part, answer)
        st.session_state[f"practice:{batch_name}"] = step + 1
        st.session_state["feedback"] = "Correct." if right else "Not quite: look again at every detail the text mentions."
        st.rerun()
    try:
        batches.submit_answer(db, role.annotator_id, batch_name, task, answer, flags=list(flags or []), comment=comment, started_at=state.started_at)
    except (TaskError, store.StoreError) as error:
        st.error(str(error))
        return
    st.rerun()


if task.questions == ("answer",):
    for column, option in zip(st.columns(len(task.options)), task.options):
        if column.button(option.label, key=f"option:{option.shortcut}", shortcut=option.shortcut or None, width="stretch"):
            record({"answer": option.value})
else:
    with st.form(key=f"form:{key}"):
        values = {o.label: o.value for o in task.options}
        chosen = {
            q: st.radio(label, list(values), horizontal=True, key=f"{q}:{key}", index=None)
            for q, label in zip(task.questions, task.question_labels)
        }
        if st.form_submit_button("Submit", shortcut="Ctrl+Enter", type="primary"):
            record({q: values.get(label) for q, label in chosen.items()})

if item is None:  # after the page is drawn: the next items' images are resized while the annotator reads
    batches.prefetch_images(db, role.annotator_id, batch_name)
