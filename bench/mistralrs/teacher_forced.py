#!/usr/bin/env python3
"""Teacher-forced comparison of two mistral.rs servers (bench/mistralrs/run.sh).

    teacher_forced.py REFERENCE_URL OTHER_URL PROMPT STEPS

Along the reference's own greedy continuation of PROMPT, STEPS positions: at each, both
servers get the same text (PROMPT and the reference's first k generated words) as a
completion request for one token, greedy, with their top-5 `logprobs` (mistral.rs reports a
score per token, the same quantity on both sides). Both sides then always see the same
prefix, so one near-tie decided differently does not change the rest, as it does in a free
greedy run. Prints one TSV fragment:

    top-1 agreement (k/STEPS), max |score difference| of the reference's top-1 token (inf
    when the other side's top 5 lacks it), the reference's largest top-1 margin (top-1 score
    minus top-2) at a disagreement (NA when there is none): a disagreement whose margin is
    below the score differences is a near-tie decided by rounding.
"""
import json
import sys
import urllib.request


def complete(url, prompt):
    body = json.dumps({"model": "default", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 5}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)
    top = answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    return [(t["bytes"], t["logprob"]) for t in top]


def main():
    reference, other, prompt, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    words = prompt.split()
    agree, max_diff, margins = 0, 0.0, []
    for _ in range(steps):
        text = " ".join(words)
        ref, oth = complete(reference, text), complete(other, text)
        ref_word, ref_score = ref[0]
        scores = dict(oth)
        if ref_word in scores:
            max_diff = max(max_diff, abs(scores[ref_word] - ref_score))
        else:
            max_diff = float("inf")
        if oth[0][0] == ref_word:
            agree += 1
        else:
            margins.append(ref_score - ref[1][1])
        words.append(ref_word)
    margin = f"{max(margins):.4f}" if margins else "NA"
    print(f"{agree}/{steps}\t{max_diff:.4f}\t{margin}")


if __name__ == "__main__":
    main()
