// ted explorer: follows one sentence through the model, step by step.
// Everything it shows comes from this server: GET /v1/explorer (the models),
// POST /v1/explore (a greedy decode with every step's top-k and attention
// weights), POST /v1/beam (a beam search, step by step). The state lives in
// the URL: ?model=NAME&source_lang=CODE&target_lang=CODE&source=TEXT&forced=N:TOKEN...
// &step=N|end&beam=N, and the rules on the scores given (&no_repeat_ngram_size=N...,
// &bad_words_ids=6,84;312)
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  // The rules on the scores the page can set: request fields, URL keys and
  // the inputs of the rules form (#rule-KEY).
  const RULES = ['no_repeat_ngram_size', 'encoder_no_repeat_ngram_size', 'repetition_penalty',
    'min_length', 'min_new_tokens'];
  // bad_words_ids, lists of target ids, as the URL and the form write them:
  // "6,84; 312" <-> [[6, 84], [312]] (null: not lists of ids)
  const BAD_WORDS = 'bad_words_ids';
  function parseBadWords(text) {
    const lists = text.split(';').map((part) => part.trim()).filter((part) => part !== '')
      .map((part) => part.split(',').map((id) => id.trim()));
    const ids = lists.flat();
    return ids.every((id) => /^[0-9]+$/.test(id)) ? lists.map((l) => l.map(Number)) : null;
  }
  function badWordsText(lists) { return lists.map((l) => l.join(',')).join('; '); }
  const KINDS = [
    { key: 'encoder', name: 'Encoder self-attention', query: 'source', keys: 'source' },
    { key: 'self', name: 'Masked decoder self-attention', query: 'target', keys: 'target' },
    { key: 'cross', name: 'Encoder-decoder attention', query: 'target', keys: 'source' },
  ];

  // What the page shows; window.ted lets tests read it.
  const state = {
    models: [],       // from GET /v1/explorer
    model: null,      // its entry
    sourceLang: null, // the languages picked among the model's codes (null: it names none)
    targetLang: null,
    source: '',
    forced: [],       // [{step, token}], step from 1
    rules: {},        // the rules given: {no_repeat_ngram_size: N, ...} (else the model's)
    step: 0,          // the step shown, 1..steps (0: nothing decoded)
    beam: 0,          // beam size of the beam view (0: none)
    data: null,       // the answer of /v1/explore
    beamData: null,   // the answer of /v1/beam
    focus: { kind: 'cross', layer: -1, head: -1 },  // head -1: the mean
  };
  const ted = { state, ready: false, error: '', timing: {} };
  window.ted = ted;

  // ---- small helpers -------------------------------------------------------

  function make(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // The server decodes one explorer request at a time and answers another
  // sent meanwhile with 503: the page sends its POSTs one after the other.
  let posting = Promise.resolve();

  async function call(url, body) {
    const options = body === undefined ? {} : {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    };
    const send = async () => {
      const response = await fetch(url, options);
      const json = await response.json();
      if (!response.ok) throw new Error(json.error || ('HTTP ' + response.status));
      return json;
    };
    if (body === undefined) return send();
    const turn = posting.then(send);
    posting = turn.catch(() => {});
    return turn;
  }

  // The page's work under way (decodes, beam searches): ted.ready once none is.
  let busy = 0;

  async function working(task) {
    busy++;
    ted.ready = false;
    try {
      return await task();
    } finally {
      busy--;
      await nextFrame();
      ted.ready = busy === 0;
    }
  }

  function showError(message) {
    ted.error = message || '';
    $('error').hidden = !message;
    $('error').textContent = message || '';
  }

  function isSpecial(token) { return /^<.*>$/.test(token); }

  function word(token, className) {
    const span = make('span', 'word' + (className ? ' ' + className : ''), token);
    if (isSpecial(token)) span.classList.add('special');
    return span;
  }

  // A token of an answer ({id, token[, language]}) as a word; a language
  // code token is marked.
  function tokenWord(t, className) {
    const span = word(t.token, className);
    if (t.language) span.classList.add('lang');
    return span;
  }

  // The request's languages and rules, as /v1/explore and /v1/beam take them.
  function languages() {
    const fields = { ...state.rules };
    if (state.sourceLang) fields.source_lang = state.sourceLang;
    if (state.targetLang) fields.target_lang = state.targetLang;
    return fields;
  }

  function steps() { return state.data ? state.data.steps.length : 0; }
  function fmt(p) { return p >= 0.0001 || p === 0 ? p.toFixed(4) : p.toExponential(1); }
  function nextFrame() { return new Promise((resolve) => requestAnimationFrame(() => resolve())); }

  // ---- the URL -------------------------------------------------------------

  function readURL() {
    const q = new URLSearchParams(location.search);
    const forced = [];
    for (const value of q.getAll('forced')) {
      const colon = value.indexOf(':');
      const step = parseInt(value.slice(0, colon), 10);
      if (colon > 0 && step >= 1) forced.push({ step, token: value.slice(colon + 1) });
    }
    const step = q.get('step');
    const rules = {};
    for (const key of RULES) {
      const value = parseFloat(q.get(key));
      if (q.has(key) && value >= 0) rules[key] = value;
    }
    const badWords = parseBadWords(q.get(BAD_WORDS) || '');
    if (badWords && badWords.length) rules[BAD_WORDS] = badWords;
    return {
      model: q.get('model'), source: q.get('source') || '', forced, rules,
      languages: { source: q.get('source_lang'), target: q.get('target_lang') },
      step: step === 'end' ? 'end' : parseInt(step || '1', 10) || 1,
      beam: parseInt(q.get('beam') || '0', 10) || 0,
    };
  }

  function writeURL() {
    const q = new URLSearchParams();
    if (state.model) q.set('model', state.model.name);
    if (state.sourceLang) q.set('source_lang', state.sourceLang);
    if (state.targetLang) q.set('target_lang', state.targetLang);
    if (state.source) q.set('source', state.source);
    for (const f of state.forced) q.append('forced', f.step + ':' + f.token);
    for (const key of RULES) if (key in state.rules) q.set(key, String(state.rules[key]));
    if (state.rules[BAD_WORDS]) q.set(BAD_WORDS, badWordsText(state.rules[BAD_WORDS]));
    if (state.data) q.set('step', state.step === steps() ? 'end' : String(state.step));
    if (state.beam) q.set('beam', String(state.beam));
    history.replaceState(null, '', '?' + q.toString());
  }

  // ---- models --------------------------------------------------------------

  function describe(model) {
    const a = model.architecture, s = model.sizes;
    return `${a.norm}, ${a.positional_encoding} positions, ${a.activation}, ` +
      `${a.tied_output ? 'tied' : 'separate'} output Linear · Embedding Size ${s.d_model}, ` +
      `${s.heads} heads (Query Size ${s.query_size}), ${s.encoder_layers} + ` +
      `${s.decoder_layers} layers · ${a.tokenizer}`;
  }

  // The codes the model translates the source language into: those of
  // its directions, every target code when it names no source language.
  function targetsOf(source) {
    const l = state.model.languages, all = l.target;
    if (!source || !l.directions || !l.directions[source]) return all;
    return all.filter((code) => l.directions[source].includes(code));
  }

  function fillSelect(side, codes, code) {
    const select = $(side + '-lang');
    select.replaceChildren(...codes.map((c) => {
      const option = make('option', '', c);
      option.value = c;
      return option;
    }));
    if (code) select.value = code;
    state[side + 'Lang'] = code;
    $(side + '-lang-label').hidden = codes.length === 0;
  }

  // The language pickers: the model's codes on each side, shown when it
  // names any, the target's those it translates the source into. A side
  // keeps the code `wanted` names when the model has it; else the source
  // takes the first that translates into some language, the target the
  // first that differs from the source.
  function fillLanguages(wanted) {
    const sources = state.model.languages.source;
    const source = sources.includes(wanted.source) ? wanted.source
      : sources.find((code) => targetsOf(code).some((t) => t !== code)) || sources[0] || null;
    fillSelect('source', sources, source);
    fillTargets(wanted.target);
    $('languages').hidden = sources.length === 0 && state.model.languages.target.length === 0;
  }

  function fillTargets(wanted) {
    const targets = targetsOf(state.sourceLang);
    const target = targets.includes(wanted) ? wanted
      : targets.find((code) => code !== state.sourceLang) || targets[0] || null;
    fillSelect('target', targets, target);
  }

  // The example menu: the model's sentences in the source language.
  function fillExamples() {
    const byLanguage = state.model.examples_by_language || {};
    const texts = (state.sourceLang && byLanguage[state.sourceLang]) || state.model.examples;
    const examples = $('examples');
    examples.replaceChildren(make('option', '', '…'));
    examples.firstChild.value = '';
    for (const text of texts) {
      const option = make('option', '', text);
      option.value = text;
      examples.append(option);
    }
  }

  function chooseModel(name, wanted) {
    state.model = state.models.find((m) => m.name === name) || state.models[0];
    $('model').value = state.model.name;
    $('variant').textContent = describe(state.model);
    fillLanguages(wanted || { source: state.sourceLang, target: state.targetLang });
    fillExamples();
    state.focus.layer = state.model.sizes.decoder_layers - 1;
  }

  // ---- decoding ------------------------------------------------------------

  // Decodes state.source with state.forced, then shows step `step`. A
  // decode asked for while one runs waits for it; of those waiting, only
  // the latest runs, with the state as it is then.
  let decoding = null;
  let wanted = null;

  function decode(step) {
    wanted = { step };
    if (!decoding) {
      decoding = working(async () => {
        while (wanted) {
          const next = wanted;
          wanted = null;
          await decodeNow(next.step);
        }
        decoding = null;
      });
    }
    return decoding;
  }

  async function decodeNow(step) {
    showError('');
    state.data = null;
    try {
      state.data = await call('/v1/explore', {
        model: state.model.name, source: state.source, forced: state.forced, ...languages(),
      });
    } catch (e) {
      state.data = null;
      showError(e.message);
    }
    if (state.data) {
      const n = steps();
      state.step = step === 'end' ? n : Math.max(1, Math.min(step, n));
    }
    render();
    if (state.beam && state.data) await beamSearch();
    writeURL();
  }

  function go(step) {
    if (!state.data) return;
    const n = steps();
    state.step = Math.max(1, Math.min(step, n));
    renderStep();
    renderAttention();
    renderExplain();
    renderBias();
    writeURL();
  }

  // Takes `token` at the current step: the continuation is decoded again.
  function force(token) {
    const step = state.step;
    const best = state.data.steps[step - 1].best.token;
    state.forced = state.forced.filter((f) => f.step < step);
    if (token !== best) state.forced.push({ step, token });
    decode(step);
  }

  function undo(step) {
    state.forced = state.forced.filter((f) => f.step < step);
    decode(step);
  }

  // ---- drawing: tokens and steps ----------------------------------------

  function render() {
    const has = !!state.data;
    for (const id of ['decode', 'attention', 'explain', 'beam']) $(id).hidden = !has;
    $('bias').hidden = !(has && state.data.position_bias);
    renderTokens();
    if (!has) return;
    renderRules();
    renderStep();
    buildGrids();
    renderAttention();
    renderExplain();
    renderBias();
    renderBeam();
  }

  // The rules form shows the rules the decode applied (the model's, or
  // those given).
  function renderRules() {
    if (!state.data || !state.data.rules) return;
    for (const key of RULES) $('rule-' + key).value = String(state.data.rules[key]);
    $('rule-' + BAD_WORDS).value = badWordsText(state.data.rules[BAD_WORDS] || []);
  }

  function renderTokens() {
    const box = $('tokens');
    box.replaceChildren();
    if (!state.data) return;
    for (const t of state.data.source.tokens) {
      const tok = make('span', 'tok' + (isSpecial(t.token) ? ' special' : '') +
        (t.language ? ' lang' : ''));
      if (t.language) tok.title = 'language code';
      tok.append(make('span', '', t.token), make('small', '', String(t.id)));
      box.append(tok);
    }
  }

  function renderStep() {
    const data = state.data, n = steps(), i = state.step - 1, s = data.steps[i];
    $('step-label').textContent = `step ${state.step} of ${n}`;
    $('first').disabled = $('prev').disabled = state.step <= 1;
    $('next').disabled = $('last').disabled = state.step >= n;
    const prefix = $('prefix');
    prefix.replaceChildren();
    for (let k = 0; k <= i; k++) prefix.append(tokenWord(data.steps[k].input));
    const chosen = $('chosen');
    chosen.replaceChildren(tokenWord(s.chosen, s.forced ? 'forced' : ''),
      make('span', '', ` p = ${fmt(s.chosen.p)}`));
    if (s.forced) {
      chosen.append(make('span', 'forced-mark',
        ` (forced; the model's choice: ${s.best.token} p = ${fmt(s.best.p)})`));
    }
    if (s.chosen.why && s.chosen.rule !== 'forced') chosen.append(make('span', 'why', ' ' + s.chosen.why));
    const list = $('candidates');
    list.replaceChildren();
    s.top.forEach((c, k) => {
      const li = make('li', c.id === s.chosen.id ? 'taken' + (s.forced ? ' forced' : '') : '');
      li.dataset.token = c.token;
      li.title = `take '${c.token}' at step ${state.step}`;
      const bar = make('div', 'bar');
      bar.style.width = (100 * c.p).toFixed(2) + '%';
      const barBox = make('div', 'bar-box');
      barBox.append(bar);
      li.append(make('span', 'rank', String(k + 1) + '.'), tokenWord(c), make('span', 'p', fmt(c.p)), barBox);
      if (c.why) {  // what a rule on the scores did to it, in the library's words
        li.classList.add(c.banned ? 'banned' : 'changed');
        li.append(make('span', 'why', c.why));
      }
      li.addEventListener('click', () => force(c.token));
      list.append(li);
    });
    const forced = $('forced');
    forced.replaceChildren();
    for (const f of state.forced) {
      const line = make('div', 'forced-mark', `step ${f.step}: forced '${f.token}'`);
      const button = make('button', '', 'undo');
      button.addEventListener('click', () => undo(f.step));
      line.append(button);
      forced.append(line);
    }
    const output = $('output');
    output.replaceChildren();
    for (let k = 0; k <= i; k++) {
      const step = data.steps[k];
      output.append(tokenWord(step.chosen, (step.forced ? 'forced ' : '') + (k === i ? 'current' : '')));
    }
    $('translation').textContent = s.text;
  }

  // ---- attention -------------------------------------------------------

  // The matrix of one attention at the current step: rows (queries) of
  // weights over the keys, with their labels; head -1 is the mean.
  function matrix(kind, layer, head) {
    const data = state.data, n = state.step;
    const source = data.source.tokens.map((t) => t.token);
    const inputs = data.steps.slice(0, n).map((s) => s.input.token);
    let rows;
    if (kind === 'encoder') rows = pick(data.encoder[layer], head);
    else rows = data.steps.slice(0, n).map((s) => pick(s[kind][layer].map((w) => [w]), head)[0]);
    const keys = kind === 'self' ? inputs : source;
    if (kind === 'self') rows = rows.map((r) => r.concat(new Array(n - r.length).fill(null)));
    return {
      rows, keys, queries: kind === 'encoder' ? source : inputs,
      current: kind === 'encoder' ? -1 : n - 1,
    };
  }

  // rows of one head (layerHeads: heads x rows x keys), or their mean.
  function pick(layerHeads, head) {
    if (head >= 0) return layerHeads[head];
    const heads = layerHeads.length;
    return layerHeads[0].map((row, i) => row.map((_, j) => {
      let sum = 0;
      for (let h = 0; h < heads; h++) sum += layerHeads[h][i][j];
      return sum / heads;
    }));
  }

  function colour(w) {
    const t = Math.max(0, Math.min(1, w));
    const r = Math.round(247 + (8 - 247) * t), g = Math.round(251 + (48 - 251) * t),
      b = Math.round(255 + (107 - 255) * t);
    return `rgb(${r},${g},${b})`;
  }

  // Draws m from (x0, y0), each weight a cw x ch rectangle.
  function paint(ctx, m, x0, y0, cw, ch) {
    m.rows.forEach((row, i) => row.forEach((w, j) => {
      ctx.fillStyle = w === null ? '#eceff4' : colour(w);
      ctx.fillRect(x0 + j * cw, y0 + i * ch, cw, ch);
    }));
    if (m.current >= 0) {
      ctx.strokeStyle = '#e07000';
      ctx.lineWidth = Math.max(1, Math.min(3, ch / 8));
      ctx.strokeRect(x0 + 0.5, y0 + m.current * ch + 0.5, m.keys.length * cw - 1, ch - 1);
    }
  }

  // A thumbnail about 64 pixels square, whatever the matrix's shape.
  function drawThumb(canvas, m) {
    const cw = Math.max(2, Math.floor(64 / m.keys.length)), ch = Math.max(2, Math.floor(64 / m.rows.length));
    canvas.width = m.keys.length * cw;
    canvas.height = m.rows.length * ch;
    paint(canvas.getContext('2d'), m, 0, 0, cw, ch);
  }

  // Builds the three layer x head grids (their canvases are drawn by renderAttention).
  function buildGrids() {
    const sizes = state.model.sizes, grids = $('grids');
    grids.replaceChildren();
    for (const kind of KINDS) {
      const layers = kind.key === 'encoder' ? sizes.encoder_layers : sizes.decoder_layers;
      const block = make('div', 'grid-block');
      block.append(make('h3', '', kind.name));
      const grid = make('div', 'grid');
      grid.style.gridTemplateColumns = `1.6rem repeat(${sizes.heads + 1}, minmax(0, 44px))`;
      grid.append(make('span', 'axis', ''));
      for (let h = 0; h < sizes.heads; h++) grid.append(make('span', 'axis', `h${h + 1}`));
      grid.append(make('span', 'axis', 'mean'));
      for (let l = 0; l < layers; l++) {
        grid.append(make('span', 'axis', `L${l + 1}`));
        for (let h = 0; h <= sizes.heads; h++) {
          const head = h === sizes.heads ? -1 : h;
          const canvas = make('canvas', 'thumb heatmap' + (head < 0 ? ' mean' : ''));
          canvas.dataset.kind = kind.key;
          canvas.dataset.layer = String(l);
          canvas.dataset.head = String(head);
          canvas.title = `${kind.name}, layer ${l + 1}, ${head < 0 ? 'mean of the heads' : 'head ' + (head + 1)}`;
          canvas.addEventListener('click', () => {
            state.focus = { kind: kind.key, layer: l, head };
            renderAttention();
          });
          grid.append(canvas);
        }
      }
      block.append(grid);
      grids.append(block);
    }
  }

  function renderAttention() {
    for (const canvas of document.querySelectorAll('canvas.thumb')) {
      const d = canvas.dataset;
      drawThumb(canvas, matrix(d.kind, +d.layer, +d.head));
      const f = state.focus;
      canvas.classList.toggle('selected', d.kind === f.kind && +d.layer === f.layer && +d.head === f.head);
    }
    drawFocus();
  }

  let focused = null;  // what the large canvas shows, for the hover

  function drawFocus() {
    const f = state.focus, kind = KINDS.find((k) => k.key === f.kind);
    const m = matrix(f.kind, f.layer, f.head);
    $('focus-title').textContent = `${kind.name} · layer ${f.layer + 1} · ` +
      (f.head < 0 ? 'mean of the heads' : `head ${f.head + 1}`) +
      (f.kind === 'encoder' ? '' : ` · step ${state.step}`);
    const canvas = $('focus-canvas'), ctx = canvas.getContext('2d');
    const label = (t) => (t.length > 12 ? t.slice(0, 11) + '…' : t);
    ctx.font = '12px system-ui, sans-serif';
    const left = 8 + Math.max(...m.queries.map((t) => ctx.measureText(label(t)).width));
    const top = 8 + Math.max(...m.keys.map((t) => ctx.measureText(label(t)).width));
    const room = Math.max(200, canvas.parentElement.clientWidth - left - 8);
    const cell = Math.max(12, Math.min(34, Math.floor(room / m.keys.length)));
    const width = left + cell * m.keys.length + 4, height = top + cell * m.rows.length + 4;
    const scale = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
    ctx.setTransform(scale, 0, 0, scale, 0, 0);
    ctx.font = '12px system-ui, sans-serif';
    ctx.fillStyle = '#1d2330';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    m.queries.forEach((t, i) => ctx.fillText(label(t), left - 6, top + (i + 0.5) * cell));
    m.keys.forEach((t, j) => {
      ctx.save();
      ctx.translate(left + (j + 0.5) * cell, top - 6);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = 'left';
      ctx.fillText(label(t), 0, 0);
      ctx.restore();
    });
    paint(ctx, m, left, top, cell, cell);
    focused = { m, left, top, cell };
    ted.focus = { left, top, cell, rows: m.rows.length, keys: m.keys.length };
  }

  function hover(event) {
    const tip = $('tip');
    if (!focused) return;
    const { m, left, top, cell } = focused;
    const box = event.target.getBoundingClientRect();
    const x = event.clientX - box.left, y = event.clientY - box.top;
    const i = Math.floor((y - top) / cell), j = Math.floor((x - left) / cell);
    const w = i >= 0 && j >= 0 && i < m.rows.length && j < m.keys.length ? m.rows[i][j] : null;
    if (w === null || w === undefined) {
      tip.hidden = true;
      return;
    }
    tip.textContent = `${m.queries[i]} → ${m.keys[j]}: ${w.toFixed(6)}`;
    tip.hidden = false;
    const focus = $('focus').getBoundingClientRect();
    tip.style.left = (event.clientX - focus.left + 12) + 'px';
    tip.style.top = (event.clientY - focus.top + 12) + 'px';
  }

  // ---- the computation --------------------------------------------------

  function renderExplain() {
    const box = $('explain-lines');
    box.replaceChildren();
    const pieces = state.data.explain_encoder.concat(state.data.steps[state.step - 1].explain);
    for (const p of pieces) {
      if (p.kind === 'line') {
        const line = make('div', 'line');
        line.append(make('span', 'words', p.words), make('span', 'shape', p.shape));
        box.append(line);
      } else {
        const line = make('div', p.kind);
        line.append(make('b', '', p.title), make('span', '', p.words));
        box.append(line);
      }
    }
  }

  // ---- the relative position bias (T5) -------------------------------------

  // A diverging colour: red for positive biases, blue for negative ones.
  function biasColour(v, scale) {
    const t = Math.max(-1, Math.min(1, scale > 0 ? v / scale : 0)), a = Math.abs(t);
    const [r, g, b] = t >= 0 ? [220, 60, 40] : [40, 90, 200];
    return `rgba(${r},${g},${b},${(0.85 * a).toFixed(3)})`;
  }

  // A stack's table B as a heat map: heads x buckets, `used` outlined.
  function biasTable(stack, name, used) {
    const table = make('table', 'bias-table');
    table.dataset.stack = name;
    const scale = Math.max(...stack.table.flat().map(Math.abs));
    const head = make('tr');
    head.append(make('th', '', name === 'encoder' ? 'encoder' : 'decoder'));
    for (let k = 0; k < stack.buckets; k++) head.append(make('th', '', String(k)));
    table.append(head);
    stack.table.forEach((row, h) => {
      const tr = make('tr');
      tr.append(make('th', '', `h${h + 1}`));
      row.forEach((v, k) => {
        const td = make('td', used.has(k) ? 'used' : '', v.toFixed(2));
        td.dataset.head = String(h);
        td.dataset.bucket = String(k);
        td.dataset.value = String(v);
        td.title = `head ${h + 1}, bucket ${k}: ${v}`;
        td.style.background = biasColour(v, scale);
        tr.append(td);
      });
      table.append(tr);
    });
    return table;
  }

  // The encoder's bucket of every (query, key) pair: rows queries, columns keys.
  function biasPairs(bias) {
    const table = $('bias-pairs'), tokens = state.data.source.tokens;
    table.replaceChildren();
    const head = make('tr');
    head.append(make('th', '', 'query \\ key'));
    for (const t of tokens) head.append(make('th', '', t.token));
    table.append(head);
    bias.pairs.forEach((row, i) => {
      const tr = make('tr');
      tr.append(make('th', '', tokens[i].token));
      row.forEach((b, j) => {
        const td = make('td', i === j ? 'current' : '', String(b));
        td.dataset.query = String(i);
        td.dataset.key = String(j);
        td.title = `query ${i}, key ${j}: distance ${j - i}, bucket ${b}`;
        tr.append(td);
      });
      table.append(tr);
    });
  }

  function renderBias() {
    const bias = state.data.position_bias;
    if (!bias) return;
    const s = state.data.steps[state.step - 1], buckets = s.self_buckets || [];
    const tables = $('bias-tables');
    tables.replaceChildren(biasTable(bias.encoder, 'encoder', new Set()),
      biasTable(bias.decoder, 'decoder', new Set(buckets)));
    const row = $('bias-step');
    row.replaceChildren();
    buckets.forEach((b, k) => {
      const key = make('span', 'key');
      key.dataset.key = String(k);
      key.dataset.bucket = String(b);
      key.title = `key ${k} (distance ${k - (state.step - 1)}): bucket ${b}`;
      key.append(tokenWord(state.data.steps[k].input), make('small', '', `bucket ${b}`));
      row.append(key);
    });
    biasPairs(bias.encoder);
  }

  // ---- beam search --------------------------------------------------------

  async function beamSearch() {
    try {
      state.beamData = await call('/v1/beam', {
        model: state.model.name, source: state.source, beam: state.beam, ...languages(),
      });
    } catch (e) {
      state.beamData = null;
      showError(e.message);
    }
    renderBeam();
  }

  function renderBeam() {
    const box = $('beam-result'), b = state.beamData;
    box.replaceChildren();
    if (!b || b.source !== state.source) return;
    box.append(make('p', 'hint', `beam ${b.beam}; finished hypotheses ranked by log-prob / lp(length), ` +
      (b.length_normalization === 'power' ? `lp = length^${b.length_penalty}` :
        `lp = ((5 + length) / 6)^${b.length_penalty}`) + '. Green: kept open; blue: finished; grey: pruned.'));
    const row = make('div', 'beam-steps');
    let open = [[]];
    for (const step of b.steps) {
      const card = make('div', 'beam-step');
      card.append(make('h3', '', `step ${step.length}` + (step.stops ? ' · the search ends' : '')));
      const next = [];
      for (const c of step.candidates) {
        const tokens = (open[c.parent] || []).concat([c.token]);
        if (c.fate === 'open') next.push(tokens);
        const line = make('div', 'hyp ' + c.fate);
        line.append(make('span', '', tokens.join(' ')),
          make('span', '', (c.fate === 'finished' ? c.score : c.log_prob).toFixed(3)));
        line.title = `${c.fate}; log-prob ${c.log_prob}` + (c.fate === 'finished' ? `, score ${c.score}` : '');
        card.append(line);
      }
      open = next;
      row.append(card);
    }
    box.append(row);
    const table = make('table', 'ranking');
    const head = make('tr');
    for (const t of ['#', 'hypothesis', 'tokens', 'log-prob', 'lp', 'score']) head.append(make('th', '', t));
    table.append(head);
    // A text reached by two tokenizations is two hypotheses: their pieces say why.
    const seen = {};
    for (const h of b.ranking) seen[h.text] = (seen[h.text] || 0) + 1;
    const twice = b.ranking.some((h) => seen[h.text] > 1);
    b.ranking.forEach((h, k) => {
      const tr = make('tr', k === 0 ? 'best' : '');
      const text = make('td', 'text', h.text);
      if (h.tokens) text.title = h.tokens.join(' ');
      if (seen[h.text] > 1 && h.tokens) text.append(make('span', 'pieces', h.tokens.join(' ')));
      tr.append(make('td', 'num', String(k + 1)), text,
        make('td', 'num', String(h.length)), make('td', 'num', h.log_prob.toFixed(4)),
        make('td', 'num', (h.log_prob / h.score).toFixed(4)), make('td', 'num', h.score.toFixed(4)));
      table.append(tr);
    });
    const tableBox = make('div', 'table-box');
    tableBox.append(table);
    box.append(make('h3', '', 'Final ranking'), tableBox);
    if (twice) {
      box.append(make('p', 'hint same-text', 'Some texts are ranked twice: the model spelled ' +
        'them with different tokens (their pieces under the text), and each spelling is a ' +
        'hypothesis of its own, with its own probability.'));
    }
    const best = make('p', 'row');
    best.append(make('span', 'label', 'best'), make('span', 'beam-best', b.best.text));
    box.append(best);
  }

  // ---- events -------------------------------------------------------------

  function startTranslation(text) {
    state.source = text.trim();
    state.forced = [];
    state.beamData = null;
    if (!state.source) return;
    const start = performance.now();
    decode(1).then(() => { ted.timing.firstView = performance.now() - start; });
  }

  // After a change of model or language: the sentence in the box decoded
  // again (what is there now, submitted or not).
  function retranslate() {
    state.beamData = null;
    if ($('source').value.trim()) startTranslation($('source').value);
    else writeURL();
  }

  function onKey(event) {
    const target = event.target;
    if (target.tagName === 'INPUT' || target.tagName === 'SELECT' || !state.data) return;
    const keys = { ArrowRight: state.step + 1, ArrowLeft: state.step - 1, Home: 1, End: steps() };
    if (!(event.key in keys)) return;
    event.preventDefault();
    go(keys[event.key]);
  }

  function wire() {
    $('source-form').addEventListener('submit', (event) => {
      event.preventDefault();
      $('source').blur();
      startTranslation($('source').value);
    });
    $('examples').addEventListener('change', (event) => {
      if (!event.target.value) return;
      $('source').value = event.target.value;
      event.target.blur();
      startTranslation(event.target.value);
    });
    $('model').addEventListener('change', (event) => {
      chooseModel(event.target.value);
      event.target.blur();
      retranslate();
    });
    for (const side of ['source', 'target']) {
      $(side + '-lang').addEventListener('change', (event) => {
        state[side + 'Lang'] = event.target.value;
        event.target.blur();
        if (side === 'source') {
          fillTargets(state.targetLang);
          fillExamples();
        }
        retranslate();
      });
    }
    $('first').addEventListener('click', () => go(1));
    $('prev').addEventListener('click', () => go(state.step - 1));
    $('next').addEventListener('click', () => go(state.step + 1));
    $('last').addEventListener('click', () => go(steps()));
    $('rules-form').addEventListener('change', (event) => {
      const key = event.target.id.replace(/^rule-/, ''), value = parseFloat(event.target.value);
      const badWords = key === BAD_WORDS ? parseBadWords(event.target.value) : null;
      if (key === BAD_WORDS && !badWords) return;
      if (key !== BAD_WORDS && (!RULES.includes(key) || !(value >= 0))) return;
      if (key !== BAD_WORDS) state.rules[key] = value;
      else if (badWords.length) state.rules[key] = badWords;
      else delete state.rules[key];
      state.beamData = null;
      state.forced = [];
      if (state.source) decode(state.step);
    });
    $('beam-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      state.beam = Math.max(1, Math.min(16, parseInt($('beam-size').value, 10) || 4));
      await working(async () => {
        await beamSearch();
        writeURL();
      });
    });
    $('focus-canvas').addEventListener('mousemove', hover);
    $('focus-canvas').addEventListener('mouseleave', () => { $('tip').hidden = true; });
    document.addEventListener('keydown', onKey);
    window.addEventListener('resize', () => { if (state.data) drawFocus(); });
  }

  async function start() {
    wire();
    try {
      const info = await call('/v1/explorer');
      state.models = info.models;
    } catch (e) {
      showError('cannot read the models: ' + e.message);
      ted.ready = true;
      return;
    }
    const $model = $('model');
    for (const m of state.models) {
      const option = make('option', '', m.name);
      option.value = m.name;
      $model.append(option);
    }
    const url = readURL();
    chooseModel(url.model, url.languages);
    state.source = url.source;
    state.forced = url.forced;
    state.rules = url.rules;
    state.beam = url.beam;
    if (state.beam) $('beam-size').value = String(state.beam);
    $('source').value = state.source;
    if (state.source) await decode(url.step);
    else ted.ready = true;
  }

  start();
})();
