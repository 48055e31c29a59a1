"""Types of the native module (``python/src/lib.rs``, PyO3)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

_Path = Union[str, "PathLike[str]"]
_Rows = List[Dict[str, Any]]

def register_policy(name: str, handler: Callable[[str], str]) -> None: ...
def simulate_trace(
    spec: _Path,
    calibration: _Path,
    schedulers: List[str],
    workers: Optional[int] = None,
    slots: Optional[int] = None,
    tasks: bool = False,
    seed: Optional[int] = None,
    shuffle: str = "auto",
) -> Tuple[str, _Rows, _Rows]: ...
def generate_instance(
    path: _Path,
    servers: int,
    cores: int,
    tasks: int,
    replication: int = 3,
    beta: float = 1000.0,
    theta: float = 1.0,
    seed: int = 1,
) -> None: ...
def simulate_instance(path: _Path, schedulers: List[str], tick: float, seed: int) -> Tuple[_Rows, _Rows]: ...
