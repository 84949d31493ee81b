"""Binary-classification metrics in numpy (no torch needed)."""

import numpy as np


def auc(scores, labels):
    """Area under the ROC curve of `scores` for 0/1 `labels`: the
    Mann-Whitney statistic, tied scores counted half (average ranks). NaN
    when only one class is present."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    positive = np.asarray(labels).reshape(-1) > 0.5
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True,
                                   return_counts=True)
    mean_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based
    rank_sum = mean_rank[inverse][positive].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def log_loss(probs, labels, eps=1e-7):
    """Mean negative log-likelihood of 0/1 `labels` under `probs`."""
    probs = np.clip(np.asarray(probs, np.float64), eps, 1 - eps)
    labels = np.asarray(labels, np.float64)
    return float(-np.mean(labels * np.log(probs)
                          + (1 - labels) * np.log(1 - probs)))


def auc_bound_failures(auc_value, planted_auc, min_auc, max_auc_gap):
    """What is wrong with an eval AUC, as messages (empty: within bounds):
    below min_auc, or more than max_auc_gap below the planted model's."""
    failures = []
    if auc_value < min_auc:
        failures.append(f"AUC {auc_value:.4f} below --min_auc={min_auc}")
    if planted_auc - auc_value > max_auc_gap:
        failures.append(f"AUC {auc_value:.4f} more than --max_auc_gap="
                        f"{max_auc_gap} below the planted {planted_auc:.4f}")
    return failures
