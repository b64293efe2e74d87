"""Example logs to learn controllers from, made here with a known controller inside (for tests and tutorials).

:func:`building_log` is a building's thermal log, the kind a plant without a simulator has: one office zone heated
through a season, every 15 minutes, under a rule-based heating controller with manual overrides. The rules are
known, so what a controller learnt from the log says can be checked against them:

* occupied: 22 °C when it is below 0 °C outside, else 21 °C; but 20 °C when the zone is above 23.5 °C already
  (sun through the glazing): an occupied zone above 23.5 °C never gets a higher setpoint;
* unoccupied (nights, weekends): 17 °C below 0 °C outside, 16 °C below 8 °C, else 15 °C;
* in 3% of the steps someone overrides it by one degree (only downwards in an occupied zone above 23.5 °C).

:data:`BUILDING_SCHEMA` names its columns (the setpoint is a discrete action: whole degrees are its classes), and
:func:`write_building_log` writes the log with its schema beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from interp_rl.io import atomic_write, atomic_write_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BUILDING_SCHEMA", "building_log", "write_building_log"]

#: The schema of :func:`building_log` (``building.schema.toml`` beside the log; see :mod:`interp_rl.logged_data`).
BUILDING_SCHEMA = """\
# What each column of the building log is: the features a controller may read, the action it sets.
task = "building-heating"
episode = "day"  # the rows of one day stay together when part of the log is held out

[features]
time_of_day = { unit = "h", description = "local time, hours after midnight" }
outdoor_temperature = { unit = "°C", description = "outdoor air temperature" }
humidity = { unit = "%", description = "outdoor relative humidity" }
wind_speed = { unit = "m/s", description = "wind speed at the roof" }
solar_radiation = { unit = "W/m²", description = "global horizontal irradiance" }
occupancy = { description = "1 when the zone is occupied, else 0" }
zone_temperature = { unit = "°C", description = "zone air temperature" }

[actions]
heating_setpoint = { unit = "°C", discrete = true, description = "heating setpoint, whole degrees 15-22" }
"""

_STEPS_PER_DAY = 96  # 15-minute steps
_DT = 0.25  # hours per step


def _rule(occupied: int, outdoor: float, zone: float) -> int:
    if occupied:
        return 20 if zone > 23.5 else (22 if outdoor < 0.0 else 21)
    return 17 if outdoor < 0.0 else (16 if outdoor < 8.0 else 15)


def building_log(n_days: int = 14, seed: int = 0) -> pd.DataFrame:
    """A building's thermal log: ``n_days`` days at 15-minute steps under a known heating controller.

    Weekdays (days 0-4 of each week) are occupied from about 7:30 to 18:00; each day draws its own mean outdoor
    temperature (-6 to 10 °C), daily swing and cloudiness. The zone is a first-order thermal model: losses through
    the envelope (more with wind), a heater of limited power driving the zone towards the setpoint, solar gains
    through the glazing and the occupants' heat. The setpoint follows the rules in the module docstring, with noise.

    Parameters
    ----------
    n_days : int, default=14
        Days logged (rows: 96 per day).
    seed : int, default=0
        Seeds the weather, the occupancy and the overrides; the same seed gives the same log.

    Returns
    -------
    pandas.DataFrame
        Columns ``day``, ``time_of_day`` [h], ``outdoor_temperature`` [°C], ``humidity`` [%], ``wind_speed`` [m/s],
        ``solar_radiation`` [W/m²], ``occupancy`` (0 or 1), ``zone_temperature`` [°C] and ``heating_setpoint``
        [°C, whole degrees 15-22], as a logger records them (rounded to its resolution).

    Examples
    --------
    >>> log = building_log(n_days=3, seed=0)
    >>> log.shape, sorted(log["heating_setpoint"].unique().tolist())
    ((288, 9), [15, 16, 17, 19, 20, 21, 22])
    >>> hot = log[(log["occupancy"] == 1) & (log["zone_temperature"] > 23.5)]
    >>> len(hot), sorted(hot["heating_setpoint"].unique().tolist())
    (18, [19, 20])
    """
    import pandas as pd

    from interp_rl.validation import check_int

    check_int(n_days, "n_days", "building_log", low=1)
    check_int(seed, "seed", "building_log", low=0)
    rng = np.random.default_rng(seed)
    rows = []
    zone, wind = 18.0, 3.0
    for day in range(n_days):
        weekday = day % 7 < 5
        mean_out = rng.uniform(-6.0, 10.0)
        swing = rng.uniform(2.0, 6.0)
        clear = rng.uniform(0.1, 1.0)
        arrive = 7.5 + rng.normal(0.0, 0.4) if weekday else np.inf
        leave = 18.0 + rng.normal(0.0, 0.5) if weekday else -np.inf
        for k in range(_STEPS_PER_DAY):
            hour = k * _DT
            outdoor = mean_out + swing * np.sin(2 * np.pi * (hour - 9.0) / 24.0) + rng.normal(0.0, 0.3)
            wind = max(0.0, wind + 0.2 * (4.0 - wind) * _DT + rng.normal(0.0, 0.6))
            humidity = float(np.clip(75.0 - 1.5 * (outdoor - mean_out) - 10.0 * (clear - 0.5) + rng.normal(0.0, 3.0),
                                     20.0, 100.0))
            sun = np.sin(np.pi * (hour - 7.5) / 10.0) if 7.5 < hour < 17.5 else 0.0
            solar = 700.0 * sun * clear * rng.uniform(0.85, 1.0)
            occupied = int(arrive <= hour < leave and rng.random() > 0.03)
            logged = (round(outdoor, 1), round(humidity), round(wind, 1), round(solar), round(zone, 1))
            setpoint = _rule(occupied, logged[0], logged[4])
            if rng.random() < 0.03:  # a manual override, never upwards in an occupied zone that is too warm
                step = -1 if occupied and logged[4] > 23.5 else int(rng.choice([-1, 1]))
                setpoint = int(np.clip(setpoint + step, 15, 22))
            rows.append((day, hour, *logged[:4], occupied, logged[4], setpoint))
            loss = (outdoor - zone) * (1.0 / 16.0 + 0.006 * wind)
            heat = min(3.0, 2.0 * (setpoint - zone)) if setpoint > zone else 0.0
            zone += _DT * (loss + heat + 0.0035 * solar + 0.6 * occupied) + rng.normal(0.0, 0.05)
    columns = ["day", "time_of_day", "outdoor_temperature", "humidity", "wind_speed", "solar_radiation",
               "occupancy", "zone_temperature", "heating_setpoint"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({"day": "int64", "humidity": "int64", "solar_radiation": "int64", "occupancy": "int64",
                         "heating_setpoint": "int64"})


def write_building_log(path: str | Path, n_days: int = 14, seed: int = 0) -> Path:
    """Write :func:`building_log` to ``path`` (``.csv`` or ``.parquet``) and :data:`BUILDING_SCHEMA` beside it
    (``building.csv``: ``building.schema.toml``), both atomically; returns ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> log = write_building_log(Path(tempfile.mkdtemp()) / "building.csv", n_days=1)
    >>> sorted(p.name for p in log.parent.iterdir())
    ['building.csv', 'building.schema.toml']
    """
    from interp_rl.errors import InterpRLError
    from interp_rl.logged_data import default_schema_path

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InterpRLError(f"Write the building log to a .csv or .parquet file; got {str(p)!r}.")
    frame = building_log(n_days, seed)
    if suffix == ".csv":
        atomic_write_text(p, frame.to_csv(index=False))
    else:
        atomic_write(p, lambda tmp: frame.to_parquet(tmp, index=False))
    atomic_write_text(default_schema_path(p).with_suffix(".toml"), BUILDING_SCHEMA)
    return p
