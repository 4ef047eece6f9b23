"""Profile charts with matplotlib (the ``viz`` extra)."""
from __future__ import annotations

from ..errors import TractileError


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise TractileError("plotting needs matplotlib: pip install 'tractile[viz]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_op_shares(report, path: str, title: str = "time per op type", limit: int = 25) -> list[tuple[str, float]]:
    """Draw the share of the run time taken by each op type as a horizontal bar chart.

    ``report`` is a :class:`~tractile.runtime.profile.ProfileReport`; at most ``limit`` op
    types are drawn (the rest are summed as "other"). Returns the (op, share) pairs drawn.
    """
    plt = _pyplot()
    total = report.real or 1e-12
    rows = [(op, real / total) for op, _, real in report.by_op()]
    if len(rows) > limit:
        rows = rows[:limit - 1] + [("other", sum(share for _, share in rows[limit - 1:]))]
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.32 * len(rows)))
    try:
        labels = [op for op, _ in rows][::-1]
        shares = [share * 100 for _, share in rows][::-1]
        bars = axes.barh(labels, shares, color="#4878a8")
        axes.bar_label(bars, labels=[f"{s:.1f}%" for s in shares], padding=3, fontsize=8)
        axes.set_xlabel("share of the time per iteration (%)")
        axes.set_xlim(0, max(shares + [1]) * 1.15)
        axes.set_title(title, fontsize=10)
        axes.spines[["top", "right"]].set_visible(False)
        figure.tight_layout()
        try:
            figure.savefig(path, dpi=110)
        except OSError as error:
            raise TractileError(f"cannot write the plot to {path}: {error.strerror or error}") from None
    finally:
        plt.close(figure)
    return rows
