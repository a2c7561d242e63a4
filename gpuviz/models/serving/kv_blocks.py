"""Figure 12.3: KV-cache memory as contiguous reservations or as paged blocks
(PagedAttention, Kwon et al. 2023).

The pool holds `pool_blocks` blocks of BLOCK token slots. Requests arrive with a prompt
and grow by one token per Step, up to `reserve` tokens, when they finish.

  contiguous  a request is admitted into the first free range of `reserve` consecutive
              slots (first fit) and keeps all of it, filled or not, until it finishes;
              a request that finds no such range waits.
  paged       a request holds ⌈tokens / BLOCK⌉ blocks anywhere in the pool, listed in its
              block table (logical block k → physical block), and takes a new block only
              when its last one is full. Fork (parallel sampling, beam search) gives a new
              sequence the same table: every block is shared (reference count 2) and
              nothing is copied. A sequence about to write into a shared block that is not
              full copies it first (copy-on-write). When Step needs a block and none is
              free, the newest running request is preempted: its blocks are freed and it
              waits to be computed again from its prompt (vLLM's recompute).

Buttons append to `history` (step, add, fork, finish, comma-separated), and compute()
replays it from the start, so a state is a setting (`--set history=step,step,fork`) and
switching the mode replays the same requests the other way.

Used share = slots holding a token / slots allocated (reserved ranges or blocks): the
waste is the unused end of every reservation, but at most BLOCK − 1 slots per paged
sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, time_readout
from gpuviz.data.hardware import DEFAULT_GPU
from gpuviz.models.serving.costs import prefill_compute_seconds
from gpuviz.models.serving.decode_batch import DEFAULT_PRESET

BLOCK = 4  # token slots per block
MODES = (("contiguous", "Contiguous"), ("paged", "Paged"))
ACTIONS = ("step", "add", "fork", "finish")
PROMPTS = (5, 3, 7, 2, 6, 4)  # prompt tokens of requests 1, 2, 3, ... (cycled)
SYSTEM_PROMPT = 2 * BLOCK  # tokens of the shared system prompt (whole blocks)
PREFIX = 0  # the owner of the prefix cache's blocks in `Pool.slots`
FIRST_REQUESTS = 3
MAX_ACTIONS = 400
FREE = -1


def parse_history(text: str) -> tuple[str, ...]:
    """Comma-separated actions: step, add, fork, finish."""
    words = tuple(word.strip().lower() for word in text.split(",") if word.strip())
    wrong = [word for word in words if word not in ACTIONS]
    if wrong:
        raise ValueError(f"unknown action {wrong[0]!r}; allowed: {', '.join(ACTIONS)}")
    if len(words) > MAX_ACTIONS:
        raise ValueError(f"at most {MAX_ACTIONS} actions")
    return words


@dataclass
class Request:
    number: int  # 1, 2, ...
    prompt: int
    length: int = 0  # tokens in its cache (0 while waiting)
    state: str = "waiting"  # waiting, running, done
    blocks: list[int] = field(default_factory=list)  # paged: its block table
    start: int = FREE  # contiguous: the first slot of its range
    forked_from: int = 0


class Pool:
    """The pool and its requests, changed action by action (module docstring)."""

    def __init__(self, mode: str, blocks: int, reserve: int, system_prompt: int = 0
                 ) -> None:
        self.mode, self.reserve, self.system_prompt = mode, reserve, system_prompt
        self.prefix: list[int] = []  # paged: the cached blocks of the system prompt
        self.saved_blocks = 0  # blocks mapped to the prefix cache instead of filled
        self.refs = np.zeros(blocks, dtype=int)  # paged: sequences using each block
        self.owner = np.full(blocks * BLOCK, FREE)  # contiguous: request of each slot
        self.requests: list[Request] = []
        self.preemptions = 0
        self.copies = 0
        for _ in range(FIRST_REQUESTS):
            self.add()
        self.message, self.warn = "", False

    # -------------------------------------------------------------- memory
    def running(self) -> list[Request]:
        return [r for r in self.requests if r.state == "running"]

    def waiting(self) -> list[Request]:
        return [r for r in self.requests if r.state == "waiting"]

    def _new_block(self) -> int | None:
        free = np.flatnonzero(self.refs == 0)
        if not len(free):
            return None
        self.refs[free[0]] = 1
        return int(free[0])

    def _free_range(self) -> int | None:
        """First slot of the first free run of `reserve` slots (first fit)."""
        run = 0
        for slot, who in enumerate(self.owner):
            run = run + 1 if who == FREE else 0
            if run == self.reserve:
                return slot - self.reserve + 1
        return None

    def _release(self, r: Request) -> None:
        for b in r.blocks:
            self.refs[b] -= 1
        r.blocks = []
        if r.start != FREE:
            self.owner[r.start:r.start + self.reserve] = FREE
            r.start = FREE

    def _admit(self) -> list[int]:
        """Admit waiting requests in order while they fit; the numbers admitted."""
        admitted = []
        for r in self.waiting():
            if self.mode == "paged":
                cached = self.prefix if r.prompt > len(self.prefix) * BLOCK else []
                need = math.ceil(r.prompt / BLOCK) - len(cached)
                if np.count_nonzero(self.refs == 0) < need:
                    break
                r.blocks = list(cached) + [self._new_block() for _ in range(need)]
                self.refs[cached] += 1
                self.saved_blocks += len(cached)
                if self.system_prompt and not self.prefix and r.prompt > self.system_prompt:
                    # the first prompt computes the system prompt; the cache keeps it
                    self.prefix = r.blocks[:self.system_prompt // BLOCK]
                    self.refs[self.prefix] += 1
            else:
                start = self._free_range()
                if start is None:
                    break
                r.start = start
                self.owner[start:start + self.reserve] = r.number
            r.state, r.length = "running", r.prompt
            admitted.append(r.number)
        return admitted

    # -------------------------------------------------------------- actions
    def add(self) -> None:
        number = len(self.requests) + 1
        prompt = self.system_prompt + PROMPTS[(number - 1) % len(PROMPTS)]
        self.requests.append(Request(number, min(prompt, self.reserve - 1)))
        admitted = self._admit()
        request = self.requests[-1]
        reused = (f", the first {len(self.prefix) * BLOCK} from the prefix cache (blocks "
                  f"{', '.join(map(str, self.prefix))}: no prefill, no new memory)"
                  if request.blocks[:len(self.prefix)] == self.prefix and self.prefix
                  and number > 1 else "")
        self.message = (f"Request {number} admitted with {request.prompt} prompt "
                        f"tokens{reused}." if number in admitted else self._no_room(number))
        self.warn = number not in admitted

    def _no_room(self, number: int) -> str:
        if self.mode == "paged":
            return f"No free block: request {number} waits."
        return (f"No free range of {self.reserve} consecutive slots: request {number} "
                "waits, though free slots may be scattered.")

    def fork(self) -> None:
        running = self.running()
        if not running:
            self.message, self.warn = "Nothing running to fork.", True
            return
        parent = running[0]
        number = len(self.requests) + 1
        child = Request(number, parent.length, forked_from=parent.number)
        self.requests.append(child)
        if self.mode == "paged":
            child.blocks = list(parent.blocks)
            for b in child.blocks:
                self.refs[b] += 1
            child.state, child.length = "running", parent.length
            self.message = (f"Request {number} is a fork of request {parent.number}: it "
                            f"shares all {len(child.blocks)} of its blocks (×2), nothing "
                            "copied. " + ("Their last block is full, so the next step "
                                          "takes new blocks: Step and fork again to see "
                                          "copy-on-write." if parent.length % BLOCK == 0
                                          else "Press Step: the first to write into the "
                                          "shared, unfilled last block copies it."))
            self.warn = False
        else:
            admitted = self._admit()
            self.message = (f"Request {number} is a fork of request {parent.number}: "
                            f"contiguous memory copies all {parent.length} tokens into a "
                            "range of its own." if number in admitted
                            else self._no_room(number))
            self.warn = number not in admitted

    def finish(self) -> None:
        running = self.running()
        if not running:
            self.message, self.warn = "Nothing running to finish.", True
            return
        done = running[0]
        self._end(done)
        admitted = self._admit()
        self.message = f"Request {done.number} finished; its memory is free again."
        if admitted:
            self.message += f" Admitted: {', '.join(map(str, admitted))}."
        self.warn = False

    def _end(self, r: Request) -> None:
        self._release(r)
        r.state = "done"

    def step(self) -> None:
        notes: list[str] = []
        warn = False
        for r in self.running():
            if r.state != "running":  # preempted earlier in this step
                continue
            if self.mode == "paged" and not self._make_room(r, notes):
                warn = True
                continue
            r.length += 1
            if r.length >= self.reserve:
                self._end(r)
                notes.append(f"request {r.number} reached {self.reserve} tokens and "
                             "finished")
        admitted = self._admit()
        if admitted:
            notes.append(f"admitted: {', '.join(map(str, admitted))}")
        waiting = len(self.waiting())
        if waiting and self.mode == "contiguous":
            free = int(np.count_nonzero(self.owner == FREE))
            notes.append(f"{waiting} waiting for {self.reserve} consecutive free slots "
                         f"({free} free in all)")
        elif waiting:
            notes.append(f"{waiting} waiting for free blocks")
        warn = warn or any("preempted" in note for note in notes)
        text = "; ".join(notes)
        self.message = ("One token added to every running request" +
                        (f": {text}." if text else "."))
        self.warn = warn

    def _make_room(self, r: Request, notes: list[str]) -> bool:
        """Paged: a block to write the next token into (a new one, or a private copy of
        a shared one); preempts the newest other request when none is free."""
        full = r.length % BLOCK == 0
        shared = bool(r.blocks) and not full and self.refs[r.blocks[-1]] > 1
        if not (full or shared):
            return True
        block = self._new_block()
        while block is None:
            victims = [v for v in self.running() if v is not r]
            if not victims:
                notes.append(f"request {r.number} waits for a free block")
                return False
            victim = victims[-1]
            self._release(victim)
            victim.state, victim.length = "waiting", 0
            self.preemptions += 1
            notes.append(f"pool full: request {victim.number} preempted (its blocks "
                         "freed; it will be computed again)")
            block = self._new_block()
        if shared:
            old = r.blocks[-1]
            self.refs[old] -= 1
            r.blocks[-1] = block
            self.copies += 1
            notes.append(f"copy-on-write: request {r.number} copied shared block {old} "
                         f"to block {block} before writing")
        else:
            r.blocks.append(block)
        return True

    # -------------------------------------------------------------- picture
    def slots(self) -> tuple[np.ndarray, np.ndarray]:
        """Per slot: the request it belongs to (FREE if none; the first sharer of a
        shared block) and whether it holds a token."""
        owner = np.full(len(self.owner), FREE)
        holds = np.zeros(len(self.owner), dtype=bool)
        for r in self.running():
            if self.mode == "paged":
                for k, b in enumerate(r.blocks):
                    if owner[b * BLOCK] == FREE:
                        owner[b * BLOCK:(b + 1) * BLOCK] = r.number
                    tokens = min(BLOCK, r.length - k * BLOCK)
                    holds[b * BLOCK:b * BLOCK + tokens] = True
            else:
                owner[r.start:r.start + self.reserve] = r.number
                holds[r.start:r.start + r.length] = True
        for b in self.prefix:  # kept by the cache when no running request maps it
            if owner[b * BLOCK] == FREE:
                owner[b * BLOCK:(b + 1) * BLOCK] = PREFIX
                holds[b * BLOCK:(b + 1) * BLOCK] = True
        return owner, holds


@dataclass(frozen=True)
class KvBlocksOut:
    mode: str
    owner: np.ndarray  # per slot
    holds: np.ndarray  # per slot
    refs: np.ndarray  # per block (paged)
    starts: tuple[int, ...]  # contiguous: first slot of each reserved range
    requests: tuple[Request, ...]
    message: str
    warn: bool
    preemptions: int
    copies: int
    selected: Request | None
    prefix: tuple[int, ...]  # blocks of the cached system prompt
    saved_blocks: int

    @property
    def allocated(self) -> int:
        return int(np.count_nonzero(self.owner != FREE))

    @property
    def used_share(self) -> float:
        return np.count_nonzero(self.holds) / self.allocated if self.allocated else 1.0

    def count(self, state: str) -> int:
        return sum(r.state == state for r in self.requests)

    def block_table(self) -> list[tuple[int, int, int, int]]:
        """The selected request's (logical block, physical block, tokens, sharers)."""
        r = self.selected
        if r is None or r.state != "running" or self.mode != "paged":
            return []
        return [(k, b, min(BLOCK, r.length - k * BLOCK), int(self.refs[b]))
                for k, b in enumerate(r.blocks)]


class KvBlocksModel(FigureModel):
    """Figure 12.3: contiguous reservations against paged blocks (module docstring)."""

    mode = Parameter("contiguous", label="Memory", choices=MODES,
                     help="Contiguous: a range of the largest size per request; paged: "
                          "blocks of 4 tokens, taken as needed")
    pool_blocks = Parameter(24, label="Pool", unit="blocks", minimum=8, maximum=64, step=1,
                            help="The KV-cache pool, in blocks of 4 token slots")
    reserve = Parameter(20, label="Longest request", unit="tokens", minimum=8, maximum=48,
                        step=1, help="Requests finish at this length; contiguous memory "
                                     "reserves it all at admission")
    selected = Parameter(1, label="Request shown", minimum=1, maximum=MAX_ACTIONS + 3,
                         step=1, help="The request whose block table is listed (or click "
                                      "its slots)")
    system_prompt = Parameter(False, label="Shared system prompt",
                              help=f"Every prompt starts with the same {SYSTEM_PROMPT} "
                                   "tokens; paged memory caches their blocks (prefix "
                                   "caching)")
    history = Parameter("", label="Actions", choices=(("", "none"),),
                        free_text=parse_history,
                        help="What the buttons did, comma-separated: step, add, fork, "
                             "finish")

    def act(self, action: str) -> None:
        """A button: append the action to the history (replayed by compute)."""
        actions = parse_history(self.history)
        if len(actions) < MAX_ACTIONS:
            self.set("history", ",".join((*actions, action)))

    def compute(self) -> KvBlocksOut:
        pool = Pool(self.mode, self.pool_blocks, self.reserve,
                    SYSTEM_PROMPT if self.system_prompt else 0)
        for action in parse_history(self.history):
            getattr(pool, action)()
        slots = self.pool_blocks * BLOCK
        if self.mode == "contiguous" and self.reserve > slots:
            # no request can ever be admitted: say so whatever the buttons did
            pool.message = (f"Each request reserves {self.reserve} slots, more than the "
                            f"whole pool of {slots}: contiguous memory can admit none. "
                            "Enlarge the pool, shorten the longest request or switch to "
                            "paged.")
            pool.warn = True
        elif not self.history:
            running = len(pool.running())
            pool.message = ("Three requests hold their prompts. Press Step to add a token "
                            "to each." if running == FIRST_REQUESTS else
                            f"{running} of the {FIRST_REQUESTS} requests "
                            f"{'holds its prompt' if running == 1 else 'hold their prompts'}"
                            "; the others wait for room.")
        owner, holds = pool.slots()
        starts = tuple(r.start for r in pool.running()) if self.mode == "contiguous" else ()
        selected = next((r for r in pool.requests if r.number == self.selected), None)
        return KvBlocksOut(self.mode, owner, holds, pool.refs.copy(), starts,
                           tuple(pool.requests), pool.message, pool.warn,
                           pool.preemptions, pool.copies, selected, tuple(pool.prefix),
                           pool.saved_blocks)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        slots = len(out.owner)
        return {
            "used_share": (Readout("Used share of allocated slots", 100 * out.used_share,
                                   "%", decimals=0) if out.allocated else
                           Readout("Used share of allocated slots", None,
                                   shown="none allocated")),
            "allocated": Readout("Slots allocated", out.allocated, total=slots),
            "running": Readout("Requests running", out.count("running")),
            "waiting": Readout("Requests waiting", out.count("waiting")),
            "shared_blocks": Readout("Shared blocks", int(np.count_nonzero(out.refs > 1))),
            "copies": Readout("Copies on write", out.copies),
            "preemptions": Readout("Preemptions", out.preemptions),
            "saved_blocks": Readout("Blocks from the prefix cache", out.saved_blocks),
            # each reuse skips the prefill of one system prompt (Llama-3-8B on an H100)
            "prefill_saved": time_readout("Prefill compute saved", out.saved_blocks * BLOCK
                                          // SYSTEM_PROMPT * prefill_compute_seconds(
                                              DEFAULT_PRESET, DEFAULT_GPU, SYSTEM_PROMPT)),
        }
