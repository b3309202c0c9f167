#!/usr/bin/env bash
# Re-runs every bundle committed in evidence/ from its campaign, in the order REPORT.md lists
# them, then signs the two that carry a signature with the key given (the project's example
# key's private half is not in the repository: pass your own, and put its public half in
# docs/keys). Run it from the repository root on a quiet machine; each campaign's exit code is
# printed, and a campaign that fails leaves the others to run. Then: `harness report`.
#   campaigns/remake_evidence.sh KEY [NAME ...]   (default: all of them)
set -u
KEY=${1:?usage: campaigns/remake_evidence.sh KEY [NAME ...]}
shift
H=.venv/bin/harness
ALL="demo_instructions ar_loop_markov ar_loop_markov.reproduction ar_loop_attention span_finding
     span_finding_unmappable span_finding_shared span_finding_retail span_finding_shared_base
     span_finding_instructions"
for name in ${*:-$ALL}; do
  start=$(date +%s)
  case $name in
    *.reproduction)
      rm -f "evidence/$name.intoto.json"
      $H reproduce "evidence/${name%.reproduction}" --out "evidence/$name" --force --sign "$KEY" ;;
    demo_instructions)
      rm -f "evidence/$name.intoto.json"
      $H run "campaigns/$name.yaml" --out "evidence/$name" --force --sign "$KEY" ;;
    *)
      $H run "campaigns/$name.yaml" --out "evidence/$name" --force ;;
  esac
  echo "remake_evidence: $name: exit $? after $(( $(date +%s) - start )) s"
done
