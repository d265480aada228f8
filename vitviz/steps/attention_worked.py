"""Step 5's worked example: softmax(q K^T / sqrt(d)) V for one query token, with the model's own
numbers (its query vector, the keys it weighs most, the weights' sum, the output). The step
(``vitviz.steps.attention``) places it after the distances; paper prints it for the query the page chose.
"""

from __future__ import annotations

from vitviz.analyses import analysis, claims
from vitviz.render import plots
from vitviz.steps.blocks import Figure, Formula, Heading, Table, Text
from vitviz.steps.picks import head_label, layer_label, token_label
from vitviz.steps.subject import Subject

TOP_KEYS = 8  # the keys the table and the bars show, most weight first
SHOW_DIMS = 8  # the entries of q and of the output shown


def worked(subject: Subject, layer: int, head: int | None, query: int) -> list:
    """The worked example for token ``query`` in ``layer``, head ``head`` (None, the mean of the
    heads on the maps: head 0 is worked, and a caption says so)."""
    tr, trace = subject.tr, subject.trace
    prefix = trace.num_prefix_tokens
    num_tokens = prefix + trace.grid_size[0] * trace.grid_size[1]
    worked_head = 0 if head is None else head
    worked = analysis.worked_attention(subject.model, trace, layer, worked_head, query)
    head_dim = worked["q"].numel()
    found: list = [
        Heading(tr("attention.worked")),
        Formula(
            r"\mathrm{Attention}(q, K, V) = \mathrm{softmax}\!\left(\frac{q K^\top}{\sqrt{d}}\right) V, \qquad d = "
            + str(head_dim),
            f"Attention(q, K, V) = softmax(q Kᵀ / √d) V,   d = {head_dim}",
        ),
        Text(
            tr(
                "attention.worked_intro",
                token=token_label(subject, query),
                where=f"{layer_label(subject, layer)}, {head_label(subject, worked_head)}",
                tokens=num_tokens,
                d=head_dim,
                sqrt_d=head_dim**0.5,
            )
        ),
    ]
    if trace.computed_in == "bfloat16":
        found.append(Text(tr("attention.worked_bf16"), role="caption"))
    if head is None:
        found.append(Text(tr("attention.worked_mean_note"), role="caption"))
    shown_dims = min(SHOW_DIMS, head_dim)
    found += [
        Text(f"**{tr('attention.worked_q', n=shown_dims, d=head_dim)}**"),
        Table(({f"q[{i}]": round(float(v), 4) for i, v in enumerate(worked["q"][:shown_dims])},)),
    ]
    rows, other_weight = analysis.top_keys(worked, trace.grid_size, prefix, TOP_KEYS)
    labels = [
        "[CLS]" if r["row"] is None else tr("attention.position", row=r["row"] + 1, col=r["col"] + 1) for r in rows
    ]
    weights = [float(r["weight"]) for r in rows]
    found += [
        Text(f"**{tr('attention.worked_keys', k=len(rows))}**"),
        Table(
            tuple(
                {
                    tr("attention.col.token"): r["token"],
                    tr("attention.col.position"): label,
                    tr("attention.col.score"): round(float(r["score"]), 4),
                    tr("attention.col.weight"): round(float(r["weight"]), 4),
                }
                for r, label in zip(rows, labels, strict=True)
            )
        ),
        Text(
            tr(
                "attention.worked_sum",
                k=len(rows),
                shown=sum(weights),
                others=num_tokens - len(rows),
                rest=other_weight,
                total=float(worked["weights"].sum()),
            )
        ),
        Figure(
            "attention_worked_bars",
            plots.key_weights(
                [f"{r['token']}: {label}" for r, label in zip(rows, labels, strict=True)],
                weights,
                title=tr("attention.worked_bars"),
            ),
            subject.says(claims.key_weights(weights, [int(r["token"]) for r in rows], num_tokens)),
        ),
        Formula(
            r"\text{output} = \sum_{j=0}^{" + str(num_tokens - 1) + r"} w_j \, v_j",
            f"output = Σ w_j v_j  (j = 0 … {num_tokens - 1})",
        ),
        Text(f"**{tr('attention.worked_output', n=shown_dims, d=head_dim)}**"),
        Table(({f"out[{i}]": round(float(v), 4) for i, v in enumerate(worked["output"][:shown_dims])},)),
        Text(tr("attention.worked_output_note", heads=trace.num_heads), role="caption"),
    ]
    return found
