"""Helpers shared by the ratelab notebooks: find and load report.json files
(schema ratelab.report.v1) and turn their generic parts into pandas frames
and matplotlib charts.

Nothing here knows a kind's exact layout: every report has the common head
(schema, scenario, kind, description, seed, ...); many have `rows` (a list of
objects: the main table); some have other lists of objects (timelines,
series). Those are what these helpers use, so reports of kinds that did not
exist when this was written still load and plot.
"""

import glob
import json
import os
import re

import matplotlib.pyplot as plt
import pandas as pd

SCHEMA = "ratelab.report.v1"


def reports_dir():
    """$RATELAB_REPORTS, else ../reports (run from notebooks/), else reports."""
    env = os.environ.get("RATELAB_REPORTS")
    if env:
        return env
    for cand in ("../reports", "reports"):
        if os.path.isdir(cand):
            return cand
    return "../reports"


def load_reports(kind=None, directory=None):
    """Every <dir>/*/report.json of schema ratelab.report.v1, sorted by folder.

    kind: None (all), a string (exact kind), or a callable kind -> bool.
    """
    directory = directory or reports_dir()
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "report.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                rep = json.load(f)
        except (OSError, ValueError) as e:
            print(f"skipping {path}: {e}")
            continue
        if not isinstance(rep, dict) or rep.get("schema") != SCHEMA:
            continue
        rep["_dir"] = os.path.dirname(path)
        k = rep.get("kind", "")
        if kind is None or (callable(kind) and kind(k)) or k == kind:
            out.append(rep)
    return out


def load_size_reports(schema=None, directory=None):
    """Every <dir>/*/size.json written by `ratelab size`, sorted by folder.

    schema: None (all), or "ratelab.size.v1" (count sizing) or
    "ratelab.size.limit.v1" (sizing for a rate limit). Each gets `_dir` and
    `_name` (its folder's name).
    """
    directory = directory or reports_dir()
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "size.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                rep = json.load(f)
        except (OSError, ValueError) as e:
            print(f"skipping {path}: {e}")
            continue
        if not isinstance(rep, dict) or not str(rep.get("schema", "")).startswith("ratelab.size"):
            continue
        if schema is not None and rep.get("schema") != schema:
            continue
        rep["_dir"] = os.path.dirname(path)
        rep["_name"] = os.path.basename(rep["_dir"])
        out.append(rep)
    return out


def overview(reports):
    """One line per report: scenario, kind, seed, runs, first sentence."""
    rows = []
    for r in reports:
        desc = r.get("description", "")
        rows.append(
            {
                "scenario": r.get("scenario"),
                "kind": r.get("kind"),
                "seed": r.get("seed"),
                "runs": r.get("runs"),
                "description": desc.split(". ")[0][:120],
            }
        )
    return pd.DataFrame(rows, columns=["scenario", "kind", "seed", "runs", "description"])


def frame(records, scenario=None):
    """A list of objects as a flat frame (nested objects become a.b columns)."""
    if not isinstance(records, list) or not records or not all(isinstance(x, dict) for x in records):
        return pd.DataFrame()
    df = pd.json_normalize(records)
    if scenario is not None:
        df.insert(0, "scenario", scenario)
    return df


def rows_frame(reports):
    """Every report's `rows`, concatenated, with a scenario column."""
    frames = [frame(r.get("rows"), r.get("scenario")) for r in reports]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def record_lists(report):
    """(field path, list of objects) for every list of objects in a report."""
    found = []

    def walk(v, path):
        if isinstance(v, dict):
            for k, x in v.items():
                if not k.startswith("_"):
                    walk(x, f"{path}.{k}" if path else k)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            found.append((path, v))

    walk(report, "")
    return found


TIME_RE = re.compile(r"(^|_)(t|time|at|ms|ns|us|s|second|seconds|tick|step)($|_)|^t_|_ms$|_ns$|_s$")


def time_column(df):
    """The first numeric column whose name looks like a time, if any."""
    for c in df.columns:
        if TIME_RE.search(str(c)) and pd.api.types.is_numeric_dtype(df[c]):
            return c
    return None


def plot_series(report, max_series=6):
    """Plots every list of objects in the report that has a time-like numeric
    column against its other numeric columns (step lines). Returns how many
    charts were drawn."""
    drawn = 0
    for path, records in record_lists(report):
        df = frame(records)
        x = time_column(df)
        if x is None or len(df) < 2:
            continue
        ys = [
            c
            for c in df.columns
            if c != x and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        ][:max_series]
        if not ys:
            continue
        fig, ax = plt.subplots(figsize=(9, 4))
        for y in ys:
            ax.step(df[x], df[y], where="post", label=y)
        ax.set_xlabel(x)
        ax.set_ylabel("value")
        ax.set_title(f"{report.get('scenario')}: {path}")
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
        plt.show()
        drawn += 1
    return drawn


def note(text):
    """A visible note in the notebook output (markdown when IPython is there)."""
    try:
        from IPython.display import Markdown, display

        display(Markdown(f"> **Note:** {text}"))
    except ImportError:  # plain python
        print(f"Note: {text}")
