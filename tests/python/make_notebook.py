"""Writes examples/notebook.ipynb (its cells, without outputs):
    python tests/python/make_notebook.py
then, from the repository root,
    jupyter nbconvert --to notebook --execute --inplace examples/notebook.ipynb
renders it (the committed notebook holds its figures)."""
import os

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

cells = [
    new_markdown_cell("""# ted from Python: translation, attention, decoding step by step

The shipped English → French model (`models/en-fr`, a small MarianMT-layout model with
SentencePiece) through the Python package (`pip install .`, [docs/python.md](../docs/python.md)).
Run it from the repository's `examples/` folder (or set `TED_MODELS`)."""),
    new_code_cell("""import os

import matplotlib.pyplot as plt
import numpy as np

import ted

models = os.environ.get("TED_MODELS", os.path.join("..", "models"))
translator = ted.Translator(os.path.join(models, "en-fr"))
translator.translate("The black cat eats the small bird.")"""),
    new_markdown_cell("""## Translating

A list in, a list out; the model's `config.yaml` gives the defaults (here greedy), and
`ted translate`'s options are keywords. With `n_best` the results are hypotheses with their
scores."""),
    new_code_cell("""sentences = ["The dog sleeps.", "My sister did not see the old green car."]
print(translator.translate(sentences))
for h in translator.translate(sentences[1], beam_size=4, n_best=3):
    print(f"{h.score:8.4f}  {h.text}")"""),
    new_markdown_cell("""## Encoder-decoder attention, every head

`trace` decodes greedily keeping every attention weight: `cross_attention` is
(layers, heads, steps, source tokens). One heatmap per layer and head: which source tokens
each generated token looked at."""),
    new_code_cell("""trace = translator.trace("The black cat eats the small bird.")
layers, heads, steps, sources = trace.cross_attention.shape
fig, axes = plt.subplots(layers, heads, figsize=(3.2 * heads, 3.0 * layers))
for layer in range(layers):
    for head in range(heads):
        ax = axes[layer, head]
        ax.imshow(trace.cross_attention[layer, head], cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
        ax.set_xticks(range(sources))
        ax.set_xticklabels(trace.source_tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(steps))
        ax.set_yticklabels(trace.tokens, fontsize=7)
fig.suptitle(trace.text)
fig.tight_layout()
plt.show()"""),
    new_markdown_cell("""## Decoding step by step

Each step feeds the token chosen before (the start token first) and ranks the next: the
model's probabilities (softmax of the logits) of its top candidates."""),
    new_code_cell("""def show(trace):
    for step in trace.steps:
        fed = translator.target_token(step.input)
        top = ", ".join(f"{c.token} {c.probability:.3f}" for c in step.candidates[:3])
        mark = " (forced)" if step.forced else ""
        print(f"{step.index:2d}  {fed:>10} -> {step.token:<10}{mark}  [{top}]")
    print(trace.text)

show(trace)"""),
    new_markdown_cell("""## Forcing a token

`force={step: id}` takes another word at a step (steps count from 1, as in `ted step --force`
and the explorer of `ted serve`); the decoder continues from it. Here step 3 takes its second
candidate instead of the first."""),
    new_code_cell("""step = trace.steps[2]
forced = translator.trace("The black cat eats the small bird.",
                          force={step.index: step.candidates[1].id})
show(forced)"""),
    new_markdown_cell("""## Logits

`logits(source, target)` feeds the start token and the target (teacher forcing): one row of
logits per position, the numbers `ted logits` prints."""),
    new_code_cell("""logits = translator.logits("The dog sleeps.", "Le chien dort.")
target = translator.tokenize_target("Le chien dort.")
probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
probabilities /= probabilities.sum(axis=1, keepdims=True)
for position, token in enumerate(target + [translator.config["tokenizer"]["eos_id"]]):
    print(f"{translator.target_token(token):>10}  p = {probabilities[position, token]:.4f}")
logits.shape"""),
]

notebook = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"}})
nbformat.write(notebook, os.path.join(ROOT, "examples", "notebook.ipynb"))
