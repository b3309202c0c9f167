"""The claim a user posts: a Markdown section for a pull request, from one verified bundle, in
the shape the two reference PRs use (revisions; the runs in execution order; the ratio and its
interval; the stage CPU table; parity in one sentence; call counts; cleanup; the digest; how a
reviewer verifies and reproduces it). Every figure is read from the bundle; nothing else is said."""
from __future__ import annotations

from harness import outcomes
from harness.render.text import cell, code, fence, md_lines, num, ratio_text, shell_word, stage_order, suite_text, table


def render(bundle, shown: str, signer: str | None = None) -> str:
    """bundle: a verified harness.bundle.read.Bundle; shown: its path as the reader will type it."""
    c, campaign = bundle.comparison, bundle.campaign
    stats, wall, parity = c["stats"], c["wall"], c["parity"]
    paired = stats["paired"]
    lines = [f"### Performance evidence: {cell(bundle.name)}", ""]
    if campaign["description"]:
        lines += [md_lines(campaign["description"], 1000), ""]
    base, cand = (campaign["revisions"][v]["sha"] for v in ("base", "candidate"))
    rounds = f"{campaign['rounds']} shuffled rounds" if campaign["rounds"] else f"the order {code(campaign['order'])}"
    lines += [f"Base {code(base)}, candidate {code(cand)}; {rounds} of one base and one candidate run, each a fresh "
              f"process; {campaign['slots']} work slot(s); {c['items']['planned']} of the {c['items']['of']} items the "
              f"workload gives; on {cell(bundle.machine.text())}.", ""]
    rows = [{"run": cell(r.label), "variant": cell(r.variant.capitalize()), "timed wall (s)": num(r.wall_s, 3),
             "status": cell(r.status)} for r in bundle.runs]
    lines += [table(rows, right=("timed wall (s)",)), ""]
    verdict = stats["verdict"]
    if paired["ci95"]:
        lines.append(f"**{verdict.capitalize()}**: candidate/base {ratio_text(paired['geomean_ratio'], paired['ci95'])} "
                     f"(95% interval over {stats['rounds']['n']} rounds, {cell(paired['metric'])} over {paired['items']} "
                     f"items; equal band +-{100 * stats['band']:.1f}%"
                     + (f", claims had to clear +-{100 * stats['claim_band']:.1f}% under load or drift"
                        if stats["claim_band"] > stats["band"] else "") + ").")
    else:
        lines.append(f"**{verdict.capitalize()}**: {cell(stats['verdict_reason'])}.")
    if wall["speedup"]:
        lines.append(f"Mean timed wall {wall['base_mean_s']:.3f} s -> {wall['candidate_mean_s']:.3f} s: "
                     f"{wall['saving_pct']:.1f}% shorter, a {wall['speedup']:.3f}x speedup.")
    per = stats["per_item"]
    if per and per["items"]:
        lines.append(f"Per item: {per['regressed']} of {per['items']} regressed and {per['improved']} improved beyond "
                     f"+-{100 * per['band']:.1f}%; the worst, {cell(per['worst']['id'])}, "
                     f"{ratio_text(per['worst']['ratio'], per['worst']['ci95'])}.")
    if c.get("instructions"):
        lines.append(cell(outcomes.instructions_text(c)) + ".")
    for warning in stats["warnings"]:
        lines.append(f"Warning: {cell(warning, 600)}.")
    lines.append("")
    if c["stages"]:
        stage_rows = []
        for name in stage_order(c["stages"]):
            s = c["stages"][name]
            calls = s["calls_per_run"]
            if isinstance(calls, dict):
                calls = ", ".join(f"{cell(k)} {v:,}" for k, v in sorted(calls.items()))
            else:
                calls = f"{calls:,}"
            stage_rows.append({"stage": cell(name), "calls/run": calls,
                               "base self CPU (s)": num(s["base_self_cpu_s"], 3),
                               "candidate self CPU (s)": num(s["candidate_self_cpu_s"], 3)})
        lines += ["Summed worker-thread CPU per run, each stage excluding its instrumented child stages (stage runs):",
                  "", table(stage_rows, right=("calls/run", "base self CPU (s)", "candidate self CPU (s)")), ""]
    fields = {f for r in bundle.runs if r.ok for it in r.items for f in it.fields}
    dtypes = sorted({f.dtype for r in bundle.runs if r.ok for it in r.items for f in it.fields.values()})
    golden = parity["golden"]
    ok_runs = [r for r in bundle.runs if r.ok]
    giving = sum(1 for it in ok_runs[0].items if it.fields) if ok_runs else parity["items"]
    of_items = f"{parity['items']} items" if giving == parity["items"] else \
        f"the {giving} items that give outputs (of {parity['items']})"
    if parity["identical"] and not parity["fields_compared"]:
        sentence = f"Outputs: none to compare (no item gave outputs; {parity['items']} items)"
    elif parity["identical"]:
        sentence = (f"Outputs: all {parity['fields_identical']} fields of {of_items} byte-identical in "
                    f"every run (fields {', '.join(cell(f) for f in sorted(fields))}; "
                    f"dtypes {', '.join(map(cell, dtypes))}; dtype, shape and raw bytes, NaN payloads included)")
    elif parity["agree"]:
        sentence = f"Outputs: {cell(outcomes.parity_text(c))}"
    else:
        from harness.comparison.parity import explain

        sentence = f"Outputs DIFFER: {cell(explain(c), 600)}"
    sentence += (f"; {parity['error_returns']} recorded error return(s), "
                 + ("identical" if parity["errors_identical"] else "not identical")
                 + f"; stage call counts {'identical' if parity['call_counts_identical'] else 'NOT identical'}")
    if golden:
        sentence += (f"; golden file {'identical' if golden['identical'] else 'DIFFERS'} on "
                     f"{golden['items_checked']} of its {golden['items']} items")
    lines += [sentence + ".", ""]
    suite = suite_text(campaign, [{"items": [{"id": it.id, "error": it.error, "fields": it.fields} for it in r.items],
                                   "metrics": r.metrics} for r in bundle.runs if r.ok][:1])
    if suite:
        lines += [line + "." for line in suite] + [""]
    procs = bundle.cleanup["processes"]
    lines += [f"Cleanup: {len(procs)} launched process(es) "
              + ("verified absent" if bundle.cleanup["all_absent"] else "NOT all verified absent") + ".",
              f"Status {c['status']}" + (f" ({cell(c['reason'])})" if c["reason"] else "") + "; bundle digest "
              f"(SHA-256 of `tagmanifest-sha256.txt`) {code(bundle.digest)}"
              + (f"; signed by {cell(signer)}" if signer else "") + ".", ""]
    return "\n".join(lines + _how_to_check(bundle, shown))


def _how_to_check(bundle, shown: str) -> list[str]:
    """The commands a reviewer pastes, only those that work for this bundle: one whose campaign
    file lay outside any git repository has no anchors, so no `--repo` and no `reproduce`."""
    from harness.judge.verify import anchorable

    word = shell_word(shown)
    if anchorable(bundle.campaign):
        return ["Verify and reproduce:", "", *fence([f"harness verify {word} --repo .",
                                                    f"python -S harness/rehash.py {word}",
                                                    f"harness reproduce {word}"], "sh"), ""]
    return ["Verify (its campaign file lay outside any git repository when it ran, so the bundle has no anchors "
            "in a repository: `verify --repo` and `reproduce` cannot work for it):", "",
            *fence([f"harness verify {word}", f"python -S harness/rehash.py {word}"], "sh"), ""]
