"""tests/import/care_score.py: the CARE to Compare authors' per-event values
and final CARE score (Gueck, Roelofs, Faulstich 2024, doi 10.3390/data9120138;
their CAREScore class in energy_fault_detector, defaults), written from the
paper independently of gridtrain's C code (src/eval/metrics.c): the reference
that test_care_protocol.py checks `doe report` against, and the scoring of the
autoencoder peer (tests/eval/care_peer_ae.py).

care_event(pred, normal, es, ee, anomaly): pred and normal are per-row arrays
over one event dataset's prediction part (alarm; status normal), [es, ee) the
rows of the event (ee exclusive). final(evs) combines the per-event dicts
(each with "anomaly" added) into the overall score.
"""
import numpy as np


def fbeta(tp, fp, fn, b=0.5):
    return (1 + b * b) * tp / ((1 + b * b) * tp + b * b * fn + fp) if tp > 0 else 0.0


def care_event(pred, normal, es, ee, anomaly):
    """the authors' per-event values (their CAREScore, docs/evaluation.md), independently of gridtrain's code"""
    n = len(pred)
    s, z = max(es, 0), max(min(ee, n), max(es, 0))
    r = np.arange(n)
    gt_ = anomaly & (r >= s) & (r < z)
    p, nm = pred.astype(bool), normal.astype(bool)
    tp, fp = int(np.sum(gt_ & p & nm)), int(np.sum(~gt_ & p & nm))
    fn, tn = int(np.sum(gt_ & ~p & nm)), int(np.sum(~gt_ & ~p & nm))
    out = {"accuracy": (tp + tn) / (tp + fp + fn + tn) if tp + fp + fn + tn else None,
           "coverage": fbeta(tp, fp, fn) if anomaly else None, "earliness": None}
    if anomaly:
        L = z - s
        i = np.arange(L)
        w = np.where(4 * i < L, 1.0, (4 - 16 * i / (4 * L - 1)) / 3)
        out["earliness"] = float(np.sum(w * p[s:z]) / np.sum(w))
    c = cmax = 0
    for k in range(min(ee, n)):
        if nm[k]:
            c = min(c + 1, 1000) if p[k] else max(0, c - 1)  # the reference caps the counter at 1000
        cmax = max(cmax, c)
    out["max_criticality"], out["detected"] = cmax, cmax >= 72
    return out


def final(evs):
    """the authors' final CARE score over per-event values"""
    an = [e for e in evs if e["anomaly"]]
    no = [e for e in evs if not e["anomaly"]]
    tp = sum(e["detected"] for e in an)
    fn = len(an) - tp
    fp = sum(e["detected"] for e in no)
    acc = np.mean([e["accuracy"] for e in no if e["accuracy"] is not None])
    if not an or not no:
        return None
    if tp + fp == 0:
        return 0.0
    if acc <= 0.5:
        return acc
    cov = np.mean([e["coverage"] for e in an])
    ear = np.mean([e["earliness"] for e in an])
    return (cov + 2 * acc + ear + fbeta(tp, fp, fn)) / 5
