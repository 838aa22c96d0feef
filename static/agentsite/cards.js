/*
 * Review cards (templates/hitl/cards/): behaviour any page that shows them can load.
 * - multiSelect: min/max enforced while choosing (the server checks them again);
 * - the fields of the answer are checked on submit (JSON editors parsed), and only those:
 *   an edit that is not being sent does not block the answer;
 * - a card form is sent once: a second click while the first answer is on its way is
 *   dropped (htmx forms: hx-sync="this:drop"; plain forms: the flag below);
 * - focus: to the field in error after a refused answer, to the next pending card after
 *   one that was taken (focusNextPending, also used by chat.js's refresh).
 * Works on cards added later (delegated listeners). No inline handlers: the CSP forbids them.
 */
(function () {
  "use strict";

  function limits(fieldset) {
    const min = parseInt(fieldset.dataset.min, 10);
    const max = parseInt(fieldset.dataset.max, 10);
    const boxes = Array.from(fieldset.querySelectorAll('input[type="checkbox"]'));
    const checked = boxes.filter((b) => b.checked).length;
    for (const box of boxes) box.disabled = !box.checked && !isNaN(max) && checked >= max;
    const status = fieldset.querySelector("[data-limits-status]");
    const form = fieldset.closest("form");
    const submit = form && form.querySelector('button[type="submit"]');
    const tooFew = !isNaN(min) && checked < min;
    if (submit) submit.disabled = tooFew;
    if (status) {
      status.textContent = tooFew ? "Choose at least " + min + " (" + checked + " chosen)."
        : (!isNaN(max) && checked >= max ? "That is the most you can choose (" + max + ")." : "");
    }
  }

  function initAll(root) {
    for (const fs of root.querySelectorAll("fieldset[data-min], fieldset[data-max]")) limits(fs);
    checkHere(root);
  }

  document.addEventListener("change", (e) => {
    const fs = e.target.closest && e.target.closest("fieldset[data-min], fieldset[data-max]");
    if (fs) limits(fs);
  });

  // A card's edit (its fields or JSON editor) is part of the answer only when its
  // decision is "edit": the part carries data-edit-for="<decision input name>", and that
  // decision is the clicked button's (per-call, review) or the row's checked radio
  // (batched). The browser's own check would take every field of the form, even those of
  // an edit nobody is sending, and block the answer on them (issue 35 item 9): card forms
  // are checked here instead (noValidate), the fields that are sent and only those.
  function editSent(part, form, submitter) {
    const name = part.dataset.editFor;
    if (submitter && submitter.name === "all") return false; // "Approve all"
    if (submitter && submitter.name === name) return submitter.value === "edit";
    const radio = Array.from(form.elements).find(
      (el) => el.type === "radio" && el.name === name && el.checked);
    return !!radio && radio.value === "edit";
  }

  function answerProblem(form, submitter) {
    // A cancel (the card's Cancel button) sends none of the fields.
    if (submitter && submitter.name === "_status") return null;
    const skipped = Array.from(form.querySelectorAll("[data-edit-for]"))
      .filter((part) => !editSent(part, form, submitter));
    for (const el of form.elements) {
      if (el.matches("textarea[data-json-editor]")) el.setCustomValidity("");
      if (skipped.some((part) => part.contains(el))) continue;
      if (el.matches("textarea[data-json-editor]") && (el.value.trim() || el.required)) {
        try { JSON.parse(el.value); } catch (err) {
          el.setCustomValidity("Not valid JSON: " + err.message);
          return el;
        }
      }
      if (el.willValidate && !el.checkValidity()) return el;
    }
    return null;
  }

  function checkHere(root) {
    const forms = Array.from(root.querySelectorAll("form[data-interrupt-id]"));
    if (root.matches && root.matches("form[data-interrupt-id]")) forms.push(root);
    for (const form of forms) form.noValidate = true;
  }

  // Choosing "Edit" on a row opens its edit.
  document.addEventListener("change", (e) => {
    const el = e.target;
    if (!el.matches || !el.matches('form[data-interrupt-id] input[type="radio"]')) return;
    const form = el.closest("form");
    for (const part of form.querySelectorAll("[data-edit-for]")) {
      if (part.dataset.editFor === el.name && el.value === "edit" && "open" in part) part.open = true;
    }
  });

  // Enter in an edit's field sends the edit, not the form's first button (which is
  // "Approve" / "Approve all": the original call would run).
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !e.target.matches || !e.target.matches("input")) return;
    const part = e.target.closest("form[data-interrupt-id] [data-edit-for]");
    if (!part) return;
    e.preventDefault();
    const form = part.closest("form");
    const save = part.querySelector('button[value="edit"]');
    if (save) { form.requestSubmit(save); return; }
    const radio = Array.from(form.elements).find((el) => el.type === "radio"
      && el.name === part.dataset.editFor && el.value === "edit");
    if (radio) radio.checked = true;
    const send = Array.from(form.querySelectorAll('button[type="submit"]')).find((b) => !b.name);
    if (send) form.requestSubmit(send); else form.requestSubmit();
  });

  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (!form.matches || !form.matches("form[data-interrupt-id], #new-chat-form")) return;
    const bad = answerProblem(form, e.submitter);
    if (bad) {
      e.preventDefault();
      e.stopImmediatePropagation();
      const part = bad.closest("details");
      if (part) part.open = true;
      bad.reportValidity();
      return;
    }
    if (form.hasAttribute("hx-post")) return; // htmx sends it (once: hx-sync drop)
    if (form.dataset.sent === "true") { e.preventDefault(); return; }
    form.dataset.sent = "true";
  }, true);

  document.addEventListener("input", (e) => {
    if (e.target.matches && e.target.matches("textarea[data-json-editor]")) {
      e.target.setCustomValidity("");
    }
  });

  // After a refused answer the card comes back with its errors: focus goes to the field
  // in error (the template marks it autofocus; htmx swaps do not focus it themselves).
  // After an answer that was taken, the card is read-only and the focus (on its button)
  // is gone: it moves to the next card still waiting for an answer.
  function afterSwap(elt) {
    // ``elt`` is the card htmx swapped in; the live refresh may have replaced it since:
    // the card in the page has its id.
    const card = elt && elt.id ? document.getElementById(elt.id) : null;
    const target = card && card.querySelector("[autofocus]");
    if (target) {
      if (document.activeElement !== target) target.focus();
    } else if (card && card.matches(".card") && card.dataset.status !== "pending") {
      focusNextPending(card);
    }
  }

  // The focus was lost with ``from`` (a card just answered, here or by a refresh): give it
  // to the first answerable pending card after it, else the last one before it.
  function focusNextPending(from) {
    const active = document.activeElement;
    if (active && active !== document.body) return;
    const open = Array.from(document.querySelectorAll(".card[data-status=pending]"))
      .filter((c) => c !== from && c.querySelector("form"));
    const next = open.find((c) => from.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING)
      || open[open.length - 1];
    if (next) {
      next.focus();
      next.scrollIntoView({ block: "nearest" });
    }
  }

  // A modal card's dialog is shown inline (no JavaScript needed to answer it); while it is
  // open and focus is inside it, Tab and Shift+Tab cycle through its own controls.
  const FOCUSABLE = "button:not([disabled]), [href], input:not([disabled]), select:not([disabled])," +
    " textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Tab") return;
    const dialog = e.target.closest && e.target.closest("dialog[data-modal][open]");
    if (!dialog) return;
    const items = Array.from(dialog.querySelectorAll(FOCUSABLE));
    if (!items.length) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (e.shiftKey && e.target === first) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && e.target === last) { e.preventDefault(); first.focus(); }
  });

  function openModal(root) {
    // A newly shown modal takes the focus (unless the person is typing somewhere else).
    const dialog = root.querySelector && root.querySelector(".card[data-status=pending] dialog[data-modal][open]");
    const busy = document.activeElement && document.activeElement !== document.body;
    if (dialog && !busy) {
      const first = dialog.querySelector(FOCUSABLE);
      if (first) first.focus();
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => initAll(document));
  } else {
    initAll(document);
  }
  document.addEventListener("htmx:load", (e) => { initAll(e.target); openModal(e.target); });
  // htmx settles a swapped card 20 ms after putting it in, and fires afterSettle on it.
  // The live refresh (chat.js swapRun) may replace the card's whole run block in between:
  // the card is then detached and its afterSettle never reaches the document. So listen on
  // the card itself, from afterSwap (fired while it is still in the page).
  document.addEventListener("htmx:afterSwap", (e) => {
    const card = e.detail.elt || e.target;
    card.addEventListener("htmx:afterSettle", () => afterSwap(card), { once: true });
  });
  document.addEventListener("DOMContentLoaded", () => openModal(document));
  window.agentsiteCards = { init: (root) => { initAll(root); openModal(root); }, focusNextPending };
})();
