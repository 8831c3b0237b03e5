"""The output schemas of `squall mcp`'s tools: the shape of each answer of :mod:`squall.agent`
as a TypedDict, from which the MCP SDK publishes each tool's ``outputSchema`` and against which
it checks every answer's structured content (tests/test_agent_mcp.py calls every tool)."""

from __future__ import annotations

from typing import Dict, List, Optional

from typing_extensions import NotRequired, TypedDict

Id = Optional[int]


class Where(TypedDict):
    flow_id: int
    thread_id: int
    thread_name: Optional[str]


class CallBrief(TypedDict):
    idx: int
    fn: str
    args: Dict[str, str]
    resumed: NotRequired[bool]
    ret_idx: Id
    running: NotRequired[bool]
    returned: NotRequired[str]
    yielded: NotRequired[str]
    awaited: NotRequired[str]
    raised: NotRequired[str]


class ThreadCall(CallBrief):
    thread_id: int
    thread_name: Optional[str]


class ThreadInfo(TypedDict):
    thread_id: int
    thread_name: Optional[str]
    entries: int
    calls: int
    limit_hit: NotRequired[str]


class FlowInfo(TypedDict):
    flow_id: int
    threads: List[ThreadInfo]
    threads_left_out: NotRequired[int]


class FnCount(TypedDict):
    fn: str
    calls: int


class ExceptionBrief(Where):
    idx: int
    fn: str
    exception: str
    caught_in: Optional[str]


class Summary(TypedDict):
    recording: NotRequired[str]
    program: NotRequired[Optional[str]]
    argv: NotRequired[List[str]]
    completed: NotRequired[bool]
    cut_short: NotRequired[str]
    object_depth: NotRequired[int]
    flows: List[FlowInfo]
    entries: int
    calls: int
    functions: int
    top_functions: List[FnCount]
    exception_count: int
    exceptions: List[ExceptionBrief]


class Calls(TypedDict):
    flow_id: int
    fn: List[str]
    total: int
    offset: int
    shown: int
    calls: List[ThreadCall]
    where: NotRequired[str]
    undecided: NotRequired[str]
    more: NotRequired[str]


class Parent(TypedDict):
    idx: int
    fn: str
    args: Dict[str, str]


class Call(Where, CallBrief):
    file: Optional[str]
    line: Optional[int]
    parent: Optional[Parent]
    children_total: int
    children: List[CallBrief]
    more: NotRequired[str]


class ExceptionFull(ExceptionBrief):
    fn_call_idx: int
    file: Optional[str]
    line: Optional[int]
    unwound: List[str]
    caught: bool


class Exceptions(TypedDict):
    total: int
    shown: int
    exceptions: List[ExceptionFull]
    more: NotRequired[str]


class Write(Where):
    idx: int
    fn: Optional[str]
    file: Optional[str]
    line: Optional[int]
    obj_id: int
    name: str
    kind: str
    old: Optional[str]
    old_from: str
    old_idx: Id
    old_thread_id: Id  # the thread of the write at old_idx (may differ from the writer's)
    old_thread_name: Optional[str]
    new: Optional[str]
    deleted: bool


class Writes(TypedDict):
    total: int
    shown: int
    left_out: int
    writes: List[Write]
    read_as: NotRequired[str]  # how a dotted name was read: `Item.price` as type Item, attribute price
    more: NotRequired[str]


class Frame(TypedDict):
    idx: int
    fn: str
    file: Optional[str]
    line: Optional[int]
    args: Dict[str, str]


class Stack(Where):
    idx: int
    frames: List[Frame]
    more: NotRequired[str]


class Frequencies(TypedDict):
    flow_id: int
    thread_id: NotRequired[int]
    thread_name: NotRequired[Optional[str]]
    functions: int
    shown: int
    frequencies: List[FnCount]


Hit = TypedDict(
    "Hit",
    {
        "flow_id": int,
        "thread_id": int,
        "thread_name": Optional[str],
        "idx": int,
        "in": str,  # where the value was: args, return, raise, bind NAME, expr SOURCE, write NAME
        "fn": str,
        "value": str,
    },
)


class Search(TypedDict):
    text: str
    hits: List[Hit]
    shown: int
    entries_searched: int
    complete: bool
    interrupted: NotRequired[bool]
    more: NotRequired[str]


class Line(TypedDict):
    idx: int
    type: str
    fn: str
    line: NotRequired[Optional[int]]
    text: str


class Window(Where):
    idx: int
    first: int
    last: int
    entries_in_thread: int
    entries: List[Line]
    capped: NotRequired[str]


class Source(Where):
    idx: int
    type: str
    fn: str
    file: Optional[str]
    line: Optional[int]
    coord: Optional[List[int]]
    lines: List[str]
    note: NotRequired[str]


class Binding(TypedDict):
    symbol: str
    value: str
    line: Optional[int]
    since_idx: int
    state_idx: NotRequired[int]
    writes_applied: NotRequired[int]


class Bindings(Where):
    idx: int
    fn_call_idx: int
    fn: str
    bindings: List[Binding]
    more: NotRequired[str]


class HistoryRow(TypedDict):
    kind: str
    thread_id: int
    thread_name: Optional[str]
    idx: Id
    value: Optional[str]
    write: NotRequired[str]


class History(TypedDict):
    flow_id: int
    obj_id: int
    thread_id: Id
    states: int
    writes: int
    shown: int
    left_out: int
    history: List[HistoryRow]
    more: NotRequired[str]


class OriginStep(TypedDict):
    step: int
    from_step: Id
    depth: int
    via: str
    thread_name: Optional[str]
    thread_id: NotRequired[int]
    idx: int
    kind: str
    fn: Optional[str]
    line: Optional[int]
    param: NotRequired[str]
    code: NotRequired[str]
    obj_id: NotRequired[int]
    value: Optional[str]
    leaf: NotRequired[str]


class Origin(Where):
    idx: int
    type: str
    steps: List[OriginStep]
    left_out: int
    more: NotRequired[str]


class DiffEvent(TypedDict):
    idx: int
    type: str
    fn: str
    line: NotRequired[Optional[int]]
    text: str


class Divergence(TypedDict):
    kind: str
    a: Optional[DiffEvent]
    b: Optional[DiffEvent]


class PathStep(TypedDict):
    a_idx: int
    b_idx: int
    fn: str


class DiffSide(Where):
    idx: NotRequired[int]
    fn: NotRequired[str]
    args: NotRequired[Dict[str, str]]
    resumed: NotRequired[bool]
    ret_idx: NotRequired[Id]
    running: NotRequired[bool]
    returned: NotRequired[str]
    yielded: NotRequired[str]
    awaited: NotRequired[str]
    raised: NotRequired[str]


class Diff(TypedDict):
    a: DiffSide
    b: DiffSide
    roots_a: NotRequired[int]
    roots_b: NotRequired[int]
    at: NotRequired[Id]
    args_equal: NotRequired[Dict[str, bool]]
    outcome_equal: NotRequired[bool]
    path: NotRequired[List[PathStep]]
    first: NotRequired[Optional[Divergence]]
    first_path: NotRequired[Optional[Divergence]]
    same: bool
    verdict: str


class FrameLocals(ThreadCall):
    locals: Dict[str, str]


class Frames(TypedDict):
    flow_id: int
    fn: List[str]
    total: int
    offset: int
    where: NotRequired[str]
    undecided: NotRequired[str]
    shown: int
    frames: List[FrameLocals]
    more: NotRequired[str]
