// The statement editor: a textarea under a highlighted copy of its text, completion of
// component and field names from the schema (and the keywords and functions the schema answer
// lists), and the statement history.

import { $, h } from './dom.js';
import { tokenize, classify, NO_LANGUAGE } from './lexer.js';

const HISTORY_KEY = 'ecsdb.inspector.history';
const HISTORY_MAX = 100;
const MAX_COMPLETIONS = 12;
const LINE_HEIGHT = 20; // px, as in style.css (.editor textarea)
const PADDING_X = 12;
const PADDING_Y = 10;

/** The editor. `onRun()` runs the statement (Ctrl+Enter). `getSchema()` gives the SchemaModel. */
export class Editor {
  constructor({ onRun, getSchema }) {
    this.input = $('query-input');
    this.highlight = $('editor-hl');
    this.popup = $('completions');
    this.onRun = onRun;
    this.getSchema = getSchema;
    this.items = [];
    this.selected = 0;
    this.errorSpan = null;
    this.historyCursor = -1;
    this.history = loadHistory();
    this.charWidth = measureCharWidth(this.input);

    this.input.addEventListener('input', () => {
      this.errorSpan = null;
      this.render();
      this.complete(false);
    });
    this.input.addEventListener('scroll', () => this.syncScroll());
    this.input.addEventListener('keydown', (e) => this.keydown(e));
    this.input.addEventListener('blur', () => setTimeout(() => this.closePopup(), 150));
    this.input.addEventListener('click', () => this.closePopup());
    $('history-clear').addEventListener('click', () => {
      this.history = [];
      saveHistory(this.history);
      this.renderHistory();
    });
    this.render();
    this.renderHistory();
  }

  get text() {
    return this.input.value;
  }

  set text(value) {
    this.input.value = value;
    this.errorSpan = null;
    this.render();
  }

  /** Marks the text from (line, column), 1-based, to the end of the word there. */
  markError(line, column) {
    if (!line || !column) return;
    const lines = this.text.split('\n');
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    offset += column - 1;
    const rest = this.text.slice(offset);
    const word = /^[A-Za-z0-9_$]+/.exec(rest);
    this.errorSpan = [offset, offset + Math.max(1, word ? word[0].length : 1)];
    this.render();
  }

  render() {
    const text = this.input.value;
    const schema = this.getSchema();
    const tokens = classify(tokenize(text), schema ? schema.fieldsOf : new Map(), schema?.language ?? NO_LANGUAGE);
    const nodes = [];
    for (const token of tokens) {
      const cls = token.type === 'ws' || token.type === 'op' || token.type === 'other' || token.type === 'ident' ? '' : `t-${token.type}`;
      const err = this.errorSpan && token.start < this.errorSpan[1] && token.start + token.text.length > this.errorSpan[0];
      const className = [cls, err ? 't-err' : ''].filter(Boolean).join(' ');
      nodes.push(className ? h('span', { class: className }, token.text) : document.createTextNode(token.text));
    }
    // A trailing newline needs a character after it to take up its line in the <pre>.
    nodes.push(document.createTextNode('\n'));
    this.highlight.replaceChildren(...nodes);
    this.syncScroll();
  }

  syncScroll() {
    const pre = this.highlight.parentElement;
    pre.scrollTop = this.input.scrollTop;
    pre.scrollLeft = this.input.scrollLeft;
  }

  keydown(e) {
    const open = !this.popup.hidden;
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      e.preventDefault();
      this.closePopup();
      this.onRun();
      return;
    }
    if (open) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const step = e.key === 'ArrowDown' ? 1 : -1;
        this.selected = (this.selected + step + this.items.length) % this.items.length;
        this.renderPopup();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        this.accept(this.items[this.selected]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        this.closePopup();
        return;
      }
    }
    if (e.ctrlKey && e.key === ' ') {
      e.preventDefault();
      this.complete(true);
      return;
    }
    if (e.key === 'Tab' && !e.shiftKey && this.wordBeforeCaret().word) {
      // Tab completes when there is something to complete; otherwise it moves focus.
      if (this.complete(true)) e.preventDefault();
      return;
    }
    if (e.ctrlKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
      e.preventDefault();
      this.walkHistory(e.key === 'ArrowUp' ? 1 : -1);
    }
  }

  /** The identifier being typed before the caret, and the component before a dot if any. */
  wordBeforeCaret() {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const m = /([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)?$/.exec(before);
    if (m) return { owner: m[1], word: m[2] || '', start: this.input.selectionStart - (m[2] || '').length };
    const w = /[A-Za-z_][A-Za-z0-9_]*$/.exec(before);
    if (w && !/[0-9]v$/.test(before.slice(-w[0].length - 1))) {
      return { owner: null, word: w[0], start: this.input.selectionStart - w[0].length };
    }
    return { owner: null, word: '', start: this.input.selectionStart };
  }

  /** Opens the completion list; `explicit` (Tab, Ctrl+Space) also lists with an empty prefix. */
  complete(explicit) {
    const schema = this.getSchema();
    const { owner, word, start } = this.wordBeforeCaret();
    const items = [];
    if (owner !== null) {
      const fields = schema?.fieldsOf.get(owner) || [];
      for (const f of fields) {
        if (f.startsWith(word)) items.push({ text: f, kind: schema.fieldType(owner, f) || 'field' });
      }
    } else if (word || explicit) {
      const lower = word.toLowerCase();
      for (const c of schema?.components || []) {
        if (c.name.toLowerCase().startsWith(lower)) items.push({ text: c.name, kind: 'component' });
      }
      const { keywords, functions } = schema?.language ?? NO_LANGUAGE;
      for (const k of keywords) {
        // A word that is both (`COUNT`) is offered once, as the function.
        if (functions.has(k.toLowerCase())) continue;
        if (word && k.toLowerCase().startsWith(lower) && k.length > word.length) items.push({ text: k, kind: 'keyword' });
      }
      for (const [f, { kind, signature }] of functions) {
        if (word && f.startsWith(lower) && f.length > word.length) items.push({ text: f, kind, title: signature, call: true });
      }
    }
    const exact = items.length === 1 && items[0].text === word;
    if (!items.length || exact || (!explicit && owner === null && word.length < 1)) {
      this.closePopup();
      return false;
    }
    this.items = items.slice(0, MAX_COMPLETIONS);
    this.selected = 0;
    this.completionStart = start;
    this.renderPopup();
    this.positionPopup();
    return true;
  }

  renderPopup() {
    this.popup.replaceChildren(
      ...this.items.map((item, i) =>
        h('li', {
          role: 'option',
          id: `completion-${i}`,
          'aria-selected': i === this.selected ? 'true' : 'false',
          onmousedown: (e) => {
            e.preventDefault();
            this.accept(item);
          },
          title: item.title || null,
        }, h('span', {}, item.text), h('span', { class: 'kind' }, item.kind))),
    );
    this.popup.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.input.setAttribute('aria-activedescendant', `completion-${this.selected}`);
    this.popup.children[this.selected]?.scrollIntoView({ block: 'nearest' });
  }

  positionPopup() {
    const before = this.input.value.slice(0, this.completionStart);
    const lines = before.split('\n');
    const line = lines.length - 1;
    const column = lines[lines.length - 1].length;
    const left = PADDING_X + column * this.charWidth - this.input.scrollLeft;
    const top = PADDING_Y + (line + 1) * LINE_HEIGHT - this.input.scrollTop + 2;
    this.popup.style.left = `${Math.max(0, left)}px`;
    this.popup.style.top = `${top}px`;
  }

  accept(item) {
    if (!item) return;
    const { value, selectionStart } = this.input;
    const insert = item.call ? `${item.text}(` : item.text;
    this.input.value = value.slice(0, this.completionStart) + insert + value.slice(selectionStart);
    const caret = this.completionStart + insert.length;
    this.input.setSelectionRange(caret, caret);
    this.closePopup();
    this.render();
  }

  closePopup() {
    this.popup.hidden = true;
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }

  /** Records a statement that was run (most recent first, no duplicates). */
  remember(text) {
    const trimmed = text.trim();
    if (!trimmed) return;
    this.history = [trimmed, ...this.history.filter((t) => t !== trimmed)].slice(0, HISTORY_MAX);
    saveHistory(this.history);
    this.historyCursor = -1;
    this.renderHistory();
  }

  walkHistory(step) {
    if (!this.history.length) return;
    this.historyCursor = Math.max(-1, Math.min(this.history.length - 1, this.historyCursor + step));
    this.text = this.historyCursor < 0 ? '' : this.history[this.historyCursor];
    const end = this.input.value.length;
    this.input.setSelectionRange(end, end);
  }

  renderHistory() {
    $('history-list').replaceChildren(
      ...(this.history.length
        ? this.history.map((text) => h('li', {}, h('button', {
          type: 'button',
          title: text,
          onclick: () => {
            this.text = text;
            this.input.focus();
          },
        }, text.replace(/\s+/g, ' '))))
        : [h('li', { class: 'muted small', style: 'padding: 6px 8px' }, 'Statements you run appear here.')]),
    );
  }
}

function loadHistory() {
  try {
    const list = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(list) ? list.filter((x) => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

function saveHistory(list) {
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(list));
  } catch {
    // Storage full or disabled: the history lives for this page only.
  }
}

function measureCharWidth(textarea) {
  const probe = h('span', { style: 'position:absolute;visibility:hidden;white-space:pre' }, 'M'.repeat(100));
  probe.style.font = getComputedStyle(textarea).font;
  document.body.append(probe);
  const width = probe.getBoundingClientRect().width / 100;
  probe.remove();
  return width || 8.4;
}
