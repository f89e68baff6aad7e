"""PPO on a nesle vector environment, in one file: the ``Args``, the ``Agent``, then the loop.

Proximal Policy Optimization (Schulman et al. 2017, arXiv:1707.06347) with generalized advantage
estimation (Schulman et al. 2016, arXiv:1506.02438), written in the manner of CleanRL's
``ppo_atari_envpool.py``: one straight loop, the paper's symbols (``gamma``, ``gae_lambda``,
``clip_coef``), every knob a field of :class:`Args`.

Everything stays on the environment's device. On the CUDA backend the env already returns
torch tensors on the GPU (observations, rewards, terminations, infos) and takes the sampled
actions as a CUDA tensor, so the rollout buffer, the advantages and the updates never leave the
GPU; the trainer itself reads a handful of numbers once per update for the log (the env's own
reads are :mod:`nesle._device`'s). On the CPU backend the same code runs with CPU tensors.

One rollout is ``num_steps`` steps of all ``num_envs`` envs; then ``update_epochs`` passes over
it in ``num_minibatches`` shuffled minibatches. Notation, per env: the step t from ``s_t`` with
action ``a_t`` gives ``r_t`` and ``done_t`` (the episode ended during the step); the env resets
in the same step (``AutoresetMode.SAME_STEP``), so ``s_{t+1}`` is then the next episode's first
observation and the return is cut there: ``delta_t = r_t + gamma V(s_{t+1}) (1 - done_t) -
V(s_t)``. An episode cut by ``max_episode_steps`` (truncated, not terminated) is bootstrapped
instead from its last observation (``infos["final_obs"]``): ``r_t += gamma V(final_obs)``, added
after the reward's scaling (``norm_reward``), since V is learned in the scaled reward's units.

The trainer knows no game: the reward is the env's (``reward=``, e.g. SMB's ``"shaped"``), and
the log reports, for the episodes that ended, their return, length and the mean of every numeric
entry of the game's final info (for SMB ``x_pos``, ``flag_get``; for Tetris the lines).

    from nesle import ppo
    result = ppo.train(ppo.Args(game="smb", total_steps=2_000_000, out="runs/smb"))
    agent = ppo.load(result.checkpoint)       # runs/smb/agent.pt: an Agent, for agent.act(obs)

or ``nesle train smb --steps 2000000 --out runs/smb``. Needs torch (``pip install nesle[torch]``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import nesle
from nesle._device import quiet_openmp
from nesle.record import RecordError, check_out_folder

quiet_openmp()  # before torch loads OpenMP
import torch  # noqa: E402
from torch import nn  # noqa: E402

#: Observation modes the agent has a network for: RAM bytes through an MLP, 84x84 gray
#: frames through the Nature DQN convolutions (Mnih et al. 2015).
NETWORKS = {"ram": "mlp", "gray84": "cnn"}


@dataclass
class Args:
    """Every setting of a run. The defaults train SMB from World 1-1 on RAM observations."""

    game: str = "smb"
    """A game name (``nesle.roms``) or a ROM path."""
    backend: str = "auto"
    """``"auto"`` (CUDA when present, else the CPU), ``"cuda"`` or ``"cpu"``."""
    device: int = 0
    """The CUDA device."""
    num_envs: int | None = None
    """Consoles run at once; None: on CUDA 16,384 with ``ram`` and 4,096 with ``gray84`` (a
    stack of frames is 14x the RAM: its rollout holds 1.8 GiB at 4,096 envs and 16 steps), on
    the CPU 8 per core."""
    obs: str = "ram"
    """``"ram"`` (2,048 bytes, an MLP) or ``"gray84"`` (84x84 frames, convolutions)."""
    frame_stack: int | None = None
    """Frames stacked per observation; None: 4 for ``gray84``, 1 for ``ram``."""
    frameskip: int = 4
    """Frames each action is held for (one env step)."""
    action_space: str | None = None
    """An action set of ``nesle.actions`` (``"right_only"``, ``"simple"``, ...); None: the
    game's default."""
    reward: Any = None
    """The env's ``reward=`` option (SMB: None for gym-super-mario-bros', ``"shaped"``)."""
    done: Any = None
    """The env's ``done=`` option (SMB: ``"life"`` by default)."""
    start_states: Any = None
    """The env's ``start_states=`` option (SMB: e.g. ``"1-1"``; None: the game's default)."""
    skip_cutscenes: bool = False
    """The env's ``skip_cutscenes=`` option (SMB: the frames without control skipped, as
    gym-super-mario-bros skips them)."""
    max_episode_steps: int | None = None
    """Truncate episodes after this many steps. A truncated episode counts as ended in the log,
    but its value target is bootstrapped from its last observation instead of cut there."""
    total_steps: int | None = None
    """Env steps to train for (summed over envs); rounded up to whole rollouts. None: 80M on
    CUDA (with RAM observations 7 minutes on an H100, after which Mario's lives end in World 1-2
    far more often than in 1-1); 1.5M on the CPU, where 32 envs took 12 minutes on 2 cores and
    brought Mario from x 797 to about 1,930 (README, Training)."""
    num_steps: int | None = None
    """Steps per env in one rollout (the rollout holds ``num_envs * num_steps`` samples); None:
    16 on CUDA (16,384 envs make 262,144 samples an update, so 80M steps are 306
    updates), 64 on the CPU."""
    learning_rate: float = 2.5e-4
    """Adam's step size."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    gamma: float = 0.99
    """The discount factor."""
    gae_lambda: float = 0.95
    """GAE's lambda."""
    num_minibatches: int = 8
    """Minibatches per epoch."""
    update_epochs: int = 4
    """Passes over each rollout."""
    norm_adv: bool = True
    """Normalize advantages within each minibatch."""
    clip_coef: float = 0.1
    """The surrogate objective's clip epsilon."""
    clip_vloss: bool = True
    """Clip the value loss around the rollout's values, as PPO's reference code does."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Clip the gradient's global norm to this."""
    target_kl: float | None = None
    """Stop an update's epochs early when the approximate KL passes this."""
    norm_reward: bool = True
    """Divide rewards by a running std of the discounted return (gymnasium's
    ``NormalizeReward``), so that one set of coefficients suits games whose rewards differ in
    scale by 100x. The log reports the raw return."""
    hidden: int = 256
    """Width of the MLP's two hidden layers (``ram``); the CNN's is 512."""
    seed: int = 0
    """Seeds torch and the env: the same seed, backend and settings give the same run on the same
    machine. On the CPU that includes torch's thread count (``torch.set_num_threads``,
    ``OMP_NUM_THREADS``), which sets how its sums are split, and so their last bits."""
    torch_deterministic: bool = True
    """``torch.backends.cudnn.deterministic``."""
    tf32: bool = True
    """Let CUDA's matrix products use TensorFloat-32 (``torch.backends.cuda.matmul.allow_tf32``
    for the run; torch's own default is full FP32, while its convolutions use TF32 already). The
    E2E protocol at 65,536 envs trains 14% faster with it, and the CUDA defaults' 80M-step run
    learns World 1-1 as it does in FP32 (docs/benchmarks/gpu-2026-12-06-tf32.json). No effect on
    the CPU."""
    out: str | None = None
    """A folder for ``agent.pt`` and ``log.jsonl``; None: nothing is written. The agent is
    saved at the end, every ``save_every`` updates, and when the run is interrupted
    (``KeyboardInterrupt``, e.g. Ctrl-C). A folder that holds a run already is refused unless
    the run resumes (``resume``) or ``overwrite`` says to replace it."""
    overwrite: bool = False
    """Let a new run replace the ``agent.pt``, ``args.json`` and ``log.jsonl`` in ``out``."""
    save_every: int = 50
    """Save ``agent.pt`` every this many updates (0: only at the end or on an interrupt)."""
    resume: str | None = None
    """An ``agent.pt`` to start from: its weights and Adam's state. Its network must be this
    run's (the same ``obs``, ``frame_stack``, actions and ``hidden``); the learning rate's
    schedule and the reward's running statistics start afresh. Into an ``out`` that holds a
    ``log.jsonl`` already, its rows are appended (``update`` and ``steps`` counted from the
    resume)."""

    def resolved(self, backend: str) -> Args:
        """These args with the defaults that depend on the backend filled in."""
        num_envs = self.num_envs
        if num_envs is None:
            if backend == "cuda":
                num_envs = 4_096 if self.obs == "gray84" else 16_384
            else:
                num_envs = 8 * (os.cpu_count() or 1)
        frame_stack = self.frame_stack or (4 if self.obs == "gray84" else 1)
        num_steps = self.num_steps or (16 if backend == "cuda" else 64)
        total_steps = self.total_steps or (80_000_000 if backend == "cuda" else 1_500_000)
        return dataclasses.replace(
            self, backend=backend, num_envs=num_envs, frame_stack=frame_stack, num_steps=num_steps,
            total_steps=total_steps,
        )


def check(args: Args) -> None:
    """Raise ``ValueError`` naming the first setting that cannot run (before anything runs or
    is written: a value that would only fail, or turn the run to NaN, in its first update)."""
    if not isinstance(args.obs, str) or args.obs not in NETWORKS:
        raise ValueError(f"obs must be one of {list(NETWORKS)} to train, got {args.obs!r}")

    def whole(name: str, lo: int, optional: bool = False) -> None:
        _check_whole(name, getattr(args, name), lo, optional)

    def real(name: str, ok: Callable[[float], bool], what: str, optional: bool = False) -> None:
        value = getattr(args, name)
        if optional and value is None:
            return
        number = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
        if not (number and ok(value)):
            raise ValueError(f"{name} must be {what}, got {value!r}")

    for name in ("num_minibatches", "update_epochs", "hidden"):
        whole(name, 1)
    for name in ("anneal_lr", "norm_adv", "clip_vloss", "norm_reward", "torch_deterministic",
                 "tf32", "overwrite"):  # fmt: skip
        if not isinstance(getattr(args, name), (bool, np.bool_)):  # "no" would be true
            raise ValueError(f"{name} must be True or False, got {getattr(args, name)!r}")
    for name in ("out", "resume"):
        value = getattr(args, name)  # "" would be the current folder
        if value is not None and not (isinstance(value, (str, os.PathLike)) and os.fspath(value)):
            raise ValueError(f"{name} must be a path or None, got {value!r}")
    whole("frameskip", 1)
    whole("device", 0)
    whole("save_every", 0)
    whole("seed", 0)
    for name in ("total_steps", "num_envs", "frame_stack", "num_steps", "max_episode_steps"):
        whole(name, 1, optional=True)
    for name in ("gamma", "gae_lambda"):
        real(name, lambda v: 0.0 <= v <= 1.0, "in [0, 1]")
    real("learning_rate", lambda v: 0 < v < math.inf, "positive and finite")
    for name in ("clip_coef", "max_grad_norm"):  # infinity: no clipping
        real(name, lambda v: v > 0, "positive")
    for name in ("ent_coef", "vf_coef"):
        real(name, lambda v: 0 <= v < math.inf, "finite and >= 0")
    real("target_kl", lambda v: 0 < v < math.inf, "positive and finite, or None", optional=True)
    if args.num_envs is not None and args.num_steps is not None:
        batch = args.num_envs * args.num_steps
        if batch % args.num_minibatches:
            raise ValueError(
                f"num_minibatches ({args.num_minibatches}) must divide the rollout's "
                f"num_envs * num_steps = {batch} samples into equal minibatches"
            )


#: What a run writes in its ``out`` folder.
RUN_FILES = ("agent.pt", "args.json", "log.jsonl")


def check_out(args: Args) -> None:
    """Raise ``ValueError`` for an ``out`` folder the run could not save to or would lose a run
    in, before anything runs: a file where the folder or its ``agent.pt`` would go, or a folder
    holding a run already that this run neither resumes nor may ``overwrite``."""
    if args.out is None:
        return
    try:
        check_out_folder(args.out)
    except RecordError as e:
        raise ValueError(f"out: {e}") from None
    out = Path(args.out)
    agent = out / "agent.pt"
    if agent.exists() and not agent.is_file():
        raise ValueError(f"out: {str(agent)!r} is not a file: the agent could not be saved there")
    held = [name for name in RUN_FILES if (out / name).is_file()]
    if held and args.resume is None and not args.overwrite:
        raise ValueError(
            f"out: {str(out)!r} holds a run already ({', '.join(held)}): resume it (resume="
            f"{str(agent)!r}, --resume), write to another folder, or replace it (overwrite=True, "
            "--overwrite)"
        )


def _check_whole(name: str, value: Any, lo: int, optional: bool = False) -> None:
    """``ValueError`` unless ``value`` is an int (not a bool) >= ``lo``, or None if ``optional``."""
    if optional and value is None:
        return
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < lo:
        what = "a positive int" if lo == 1 else f"an int >= {lo}"
        what += " or None" if optional else ""
        raise ValueError(f"{name} must be {what}, got {value!r}")


# --- the agent ---


def layer_init(layer: nn.Module, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Module:
    """Orthogonal weights, constant bias: PPO's reference initialisation."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """A shared trunk with a policy head (logits over the env's actions) and a value head.

    The trunk takes the observation as the env gives it (uint8, ``(k, 2048)`` RAM or
    ``(k, 84, 84)`` frames with ``k`` stacked) and scales it to [0, 1]."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, network: str, hidden: int = 256):
        super().__init__()
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.num_actions = int(num_actions)
        self.network = network
        self.hidden = hidden
        self.args: dict[str, Any] | None = None  # the run's args, once loaded (load)
        self.optimizer_state: dict[str, Any] | None = None  # Adam's, once loaded (load)
        if network == "mlp":
            width = int(np.prod(obs_shape))
            self.trunk = nn.Sequential(
                nn.Flatten(),
                layer_init(nn.Linear(width, hidden)),
                nn.ReLU(),
                layer_init(nn.Linear(hidden, hidden)),
                nn.ReLU(),
            )
            features = hidden
        elif network == "cnn":
            channels = obs_shape[0] if len(obs_shape) == 3 else 1
            self.trunk = nn.Sequential(
                # One frame (84, 84) -> one channel (1, 84, 84).
                nn.Unflatten(1, (1, 84)) if len(obs_shape) == 2 else nn.Identity(),
                layer_init(nn.Conv2d(channels, 32, 8, stride=4)),
                nn.ReLU(),
                layer_init(nn.Conv2d(32, 64, 4, stride=2)),
                nn.ReLU(),
                layer_init(nn.Conv2d(64, 64, 3, stride=1)),
                nn.ReLU(),
                nn.Flatten(),
                layer_init(nn.Linear(64 * 7 * 7, 512)),
                nn.ReLU(),
            )
            features = 512
        else:
            raise ValueError(f"network must be 'mlp' or 'cnn', got {network!r}")
        # Small policy weights start near the uniform policy; the value head at unit scale.
        self.actor = layer_init(nn.Linear(features, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(features, 1), std=1.0)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        return self.trunk(obs.float() / 255.0)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s): (B,) float32."""
        return self.critic(self.features(obs)).squeeze(-1)

    def act_and_value(
        self, obs: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(a, log pi(a|s), the policy's entropy, V(s)); ``a`` is sampled unless given."""
        h = self.features(obs)
        dist = torch.distributions.Categorical(logits=self.actor(h))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h).squeeze(-1)

    @torch.no_grad()
    def act(
        self, obs: Any, greedy: bool = False, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Actions for a batch of observations (a tensor or NumPy array, on any device): sampled
        from the policy (with ``generator``, else torch's global one), or with ``greedy`` the
        most likely."""
        device = next(self.parameters()).device
        logits = self.actor(self.features(torch.as_tensor(obs, device=device)))
        if greedy:
            return logits.argmax(-1)
        return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


def save(
    agent: Agent, path: str | Path, args: Args | None = None,
    optimizer: torch.optim.Optimizer | None = None,
) -> Path:  # fmt: skip
    """Write the agent's weights and shape to ``path``, with the run's args and the optimizer's
    state (for ``Args.resume``) when given."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and then renamed: a save cut short (Ctrl-C, a full disk) leaves the last
    # whole agent in place.
    part = path.with_name(path.name + ".part")
    blob = {
        "format": "nesle-ppo-1",
        "obs_shape": [int(d) for d in agent.obs_shape],
        "num_actions": int(agent.num_actions),  # gymnasium's Discrete.n is a NumPy int
        "network": agent.network,
        "hidden": agent.hidden,
        # JSON's types only, so that loading needs no pickled objects (a reward callable
        # is kept by its name).
        "args": _plain(dataclasses.asdict(args)) if args is not None else None,
        "state_dict": agent.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
    }
    try:
        torch.save(blob, part)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return path


def args_of(agent: Agent) -> Args:
    """The args of the run that trained a loaded agent (:func:`load`)."""
    if agent.args is None:
        raise ValueError("this agent was saved without its run's args (nesle.ppo.save(args=...))")
    known = {f.name for f in dataclasses.fields(Args)}
    for k, v in agent.args.items():
        if isinstance(v, dict) and UNSAVED in v:
            raise ValueError(
                f"this agent's run set {k}={v[UNSAVED]}, which cannot be saved: build its "
                f"Args yourself, with that {k}"
            )
    try:
        args = Args(**{k: v for k, v in agent.args.items() if k in known})
        check(args)
    except (TypeError, ValueError) as e:
        raise ValueError(f"this agent's saved args cannot run: {e}") from None
    return args


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    plain: dict[str, Any] = json.loads(json.dumps(value, default=_unsaved))
    return plain


#: The key of a setting saved by its name only (see :func:`_unsaved`).
UNSAVED = "nesle-unsaved"


def _unsaved(value: Any) -> Any:
    """What JSON cannot hold as it is: a NumPy number as its Python number, a path as its string;
    anything else (a reward callable) by its name, marked so that :func:`args_of` refuses it."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return {UNSAVED: repr(value)}


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    """A log row as strict JSON: a number that is not finite (the explained variance of a
    rollout of one sample) as null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def load(path: str | Path, device: str | torch.device = "cpu") -> Agent:
    """An :class:`Agent` saved by :func:`save` (or by :func:`train` as ``agent.pt``), in eval
    mode on ``device``. Its run's args are in ``agent.args`` (a dict, or None)."""
    device = torch.device(device)  # a bad device name is its own error, not the file's
    try:
        # Onto the CPU first: a file saved on a GPU loads on a machine without one, and a
        # device that cannot be used is .to()'s error below, not a verdict on the file.
        blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    except OSError:  # a missing or unreadable file says so itself
        raise
    except Exception as e:  # truncated, not torch's format, or objects weights_only refuses
        # torch's own message runs to paragraphs (and, for a pickle it refuses, suggests
        # weights_only=False, which would run the file's code): its first sentence is enough.
        why = str(e).strip().split("\n")[0].split(". ")[0]
        raise ValueError(f"{path} is not a nesle PPO agent ({type(e).__name__}: {why})") from e
    if not isinstance(blob, dict) or blob.get("format") != "nesle-ppo-1":
        raise ValueError(f"{path} is not a nesle PPO agent (saved by nesle.ppo.save)")
    try:
        shape, actions = tuple(blob["obs_shape"]), blob["num_actions"]
        agent = Agent(shape, actions, blob["network"], blob["hidden"])
        agent.load_state_dict(blob["state_dict"])
        agent.args, agent.optimizer_state = blob["args"], blob.get("optimizer")
        if not (agent.args is None or isinstance(agent.args, dict)):
            raise TypeError(f"its args are a {type(agent.args).__name__}, not a dict")
        adam = agent.optimizer_state
        if not (adam is None or (isinstance(adam, dict) and {"state", "param_groups"} <= set(adam))):
            raise TypeError("its optimizer state is not torch's (state and param_groups)")
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as e:  # not its own parts
        raise ValueError(f"{path} is not a whole nesle PPO agent ({type(e).__name__}: {e})") from e
    return agent.to(device).eval()


# --- what the loop keeps besides the rollout ---


class RewardScaler:
    """Rewards divided by the running std of the envs' discounted returns, kept on the device,
    the statistics in float64. As gymnasium's ``NormalizeReward``, except that an env's return
    restarts after the step its episode ended in (gymnasium restarts it one step early, so an
    episode's last reward counts alone)."""

    def __init__(self, num_envs: int, gamma: float, device: torch.device, epsilon: float = 1e-8):
        self.gamma, self.epsilon = gamma, epsilon
        self.ret = torch.zeros(num_envs, dtype=torch.float64, device=device)
        self.mean = torch.zeros((), dtype=torch.float64, device=device)
        self.var = torch.ones((), dtype=torch.float64, device=device)
        self.count = 1e-4

    def __call__(self, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        self.ret = self.ret * self.gamma + reward
        # Chan et al.'s parallel update of (mean, var) with this batch of returns.
        n = self.ret.numel()
        batch_mean, batch_var = self.ret.mean(), self.ret.var(unbiased=False)
        delta, total = batch_mean - self.mean, self.count + n
        self.mean = self.mean + delta * n / total
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.var, self.count = m2 / total, total
        self.ret = torch.where(done, 0.0, self.ret)
        return (reward / torch.sqrt(self.var + self.epsilon)).float()


class EpisodeStats:
    """Sums over the episodes that end, kept on the device and read once per update: their
    raw return and length, and every numeric entry of the game's final info."""

    def __init__(self, num_envs: int, device: torch.device):
        self.device = device
        self.ret = torch.zeros(num_envs, dtype=torch.float64, device=device)
        self.len = torch.zeros(num_envs, dtype=torch.int64, device=device)
        self.sums: dict[str, torch.Tensor] = {}

    def _add(self, key: str, value: torch.Tensor) -> None:
        if key in self.sums:
            self.sums[key] += value
        else:
            self.sums[key] = value.clone()

    def record(self, reward: torch.Tensor, done: torch.Tensor, info: dict[str, Any]) -> None:
        self.ret += reward
        self.len += 1
        d = done.to(torch.float64)
        self._add("episodes", d.sum())
        self._add("return", (self.ret * d).sum())
        self._add("length", (self.len.to(torch.float64) * d).sum())
        final = info.get("final_info")
        if isinstance(final, dict):
            for key, value in final.items():
                if key.startswith("_") or key == "elapsed_steps":
                    continue
                v = value if isinstance(value, torch.Tensor) else _numeric(value)
                if v is None or v.dtype in (torch.complex64, torch.complex128):
                    continue
                v = v.to(self.device, torch.float64)
                if v.shape == done.shape:  # apart from the sums above, whatever its name
                    self._add("info:" + key, torch.where(done, v, 0.0).sum())
        self.ret = torch.where(done, 0.0, self.ret)
        self.len = torch.where(done, 0, self.len)

    def take(self) -> dict[str, float]:
        """The means over the episodes ended since the last call (one read from the device);
        ``episodes`` is how many."""
        if not self.sums:
            return {"episodes": 0}
        keys = list(self.sums)
        values = torch.stack([self.sums[k] for k in keys]).cpu().tolist()
        self.sums = {}
        got = dict(zip(keys, values))
        n = got.pop("episodes")
        out: dict[str, float] = {"episodes": int(n)}
        if n:
            for key, total in got.items():
                name = key.removeprefix("info:")
                if key != name and name in ("return", "length"):  # a game's own, beside ours
                    name = "info_" + name
                out[f"episode_{name}"] = total / n
        return out


def _numeric(value: Any) -> torch.Tensor | None:
    """A NumPy info entry as a tensor, or None for names and other non-numbers."""
    a = np.asarray(value)
    if a.dtype == bool or np.issubdtype(a.dtype, np.number):
        return torch.from_numpy(a.astype(np.float64))
    return None


def _final_obs(info: dict[str, Any], mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The observations before the reset, where ``mask`` (the CUDA backend gives one tensor;
    the CPU backend an object array, None where no episode ended)."""
    final = info["final_obs"]
    if isinstance(final, torch.Tensor):
        return final
    out = like.clone()
    for i in np.flatnonzero(mask.cpu().numpy()):
        out[i] = torch.from_numpy(np.asarray(final[i]))
    return out


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    next_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> torch.Tensor:
    """Generalized advantage estimates of a rollout, (T, N) each: ``dones[t]`` is 1 where the
    episode ended during step t, and ``next_value`` is V(s_T) after the last step.

    ``delta_t = r_t + gamma V(s_{t+1}) (1 - done_t) - V(s_t)``, and
    ``A_t = delta_t + gamma lambda (1 - done_t) A_{t+1}``."""
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(next_value)
    for t in reversed(range(rewards.shape[0])):
        v_next = next_value if t == rewards.shape[0] - 1 else values[t + 1]
        not_done = 1.0 - dones[t]
        delta = rewards[t] + gamma * v_next * not_done - values[t]
        last = delta + gamma * gae_lambda * not_done * last
        advantages[t] = last
    return advantages


@dataclass
class Result:
    """What :func:`train` returns."""

    args: Args
    """The args as run (defaults resolved)."""
    agent: Agent
    steps: int
    """Env steps taken."""
    seconds: float
    """Wall time of the loop (rollouts and updates; the env's set-up excluded)."""
    log: list[dict[str, float]] = field(default_factory=list)
    """One row per update."""
    checkpoint: Path | None = None

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def _as_tensor(x: Any, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """An env's output on ``device`` (a no-op for a tensor already there)."""
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(x), device=device, dtype=dtype)


def _env_actions(action: torch.Tensor) -> Any:
    """Actions as the env takes them best: a CUDA tensor as it is (the CUDA backend reads it on
    the GPU), else a NumPy array (both backends take one)."""
    return action if action.is_cuda else action.numpy()


# --- the loop, and a measure of what it learned ---


def make_env(
    args: Args, num_envs: int | None = None, seed: int | None = None, **kwargs: Any
) -> Any:
    """The vector env a run of ``args`` trains on (``args`` resolved: see :meth:`Args.resolved`);
    ``kwargs`` go to ``make_vec`` as well (e.g. ``render_mode``)."""
    return nesle.make_vec(
        args.game,
        num_envs=(args.num_envs or 1) if num_envs is None else num_envs,
        backend=args.backend,
        device=args.device,
        frameskip=args.frameskip,
        obs=args.obs,
        frame_stack=args.frame_stack or 1,
        action_space=args.action_space,
        reward=args.reward,
        done=args.done,
        start_states=args.start_states,
        skip_cutscenes=args.skip_cutscenes,
        max_episode_steps=args.max_episode_steps,
        seed=args.seed if seed is None else seed,
        **kwargs,
    )


def _agent_step(
    env: Any, agent: Agent, obs: torch.Tensor, greedy: bool, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
    """One step of ``env`` with the agent's actions: (obs, reward float64, done, info) on the
    agent's device."""
    device = obs.device
    action = agent.act(obs, greedy, generator)
    obs, reward, terminated, truncated, info = env.step(_env_actions(action))
    done = _as_tensor(terminated, device, torch.bool) | _as_tensor(truncated, device, torch.bool)
    return _as_tensor(obs, device), _as_tensor(reward, device, torch.float64), done, info


@torch.no_grad()
def evaluate(
    agent: Agent, args: Args, num_envs: int = 16, max_steps: int = 5000, seed: int = 12345,
    greedy: bool = False,
) -> dict[str, float]:  # fmt: skip
    """Each of ``num_envs`` envs (the settings of ``args``, resolved) plays one episode with
    ``agent``; the means over those episodes of the raw return, the length and the game's final
    info (as :func:`train` logs them), and ``unfinished``: envs still playing after
    ``max_steps`` (left out of the means). The same seed gives the same episodes: it seeds the
    env and the actions' draws."""
    _check_episode_args(max_steps, seed)
    env = make_env(args, num_envs, seed)
    try:
        _check_fits(agent, env)
        device = next(agent.parameters()).device
        generator = torch.Generator(device).manual_seed(seed)
        stats = EpisodeStats(num_envs, device)
        finished = torch.zeros(num_envs, dtype=torch.bool, device=device)
        obs = _as_tensor(env.reset(seed=seed)[0], device)
        _check_finite(agent, obs)
        for _ in range(max_steps):
            obs, reward, done, info = _agent_step(env, agent, obs, greedy, generator)
            stats.record(reward, done & ~finished, info)
            finished |= done
            if bool(finished.all()):
                break
        result = stats.take()
        result["unfinished"] = int((~finished).sum())
        return result
    finally:
        env.close()


@torch.no_grad()
def record(
    agent: Agent, args: Args, out: str | Path, max_steps: int = 5000, seed: int = 12345,
    greedy: bool = False,
) -> dict[str, float]:  # fmt: skip
    """One episode of ``agent`` (the settings of ``args``, resolved) written to ``out`` as a
    GIF, animated PNG or MP4 (:func:`nesle.record.open_writer`): the screen after every step,
    shown for the step's frames. Returns :func:`evaluate`'s numbers for that episode; one cut
    short by ``max_steps`` (``unfinished`` 1) has its return and length so far."""
    from nesle import record as rec

    rec.check_out(out, rec.FORMATS)
    _check_episode_args(max_steps, seed)
    # Without autoreset the env stops on the episode's last screen, and its info is the end's.
    env = make_env(args, 1, seed, render_mode="rgb_array", autoreset=False)
    writer = None
    try:
        _check_fits(agent, env)  # before the writer: no file for an agent of another game
        device = next(agent.parameters()).device
        generator = torch.Generator(device).manual_seed(seed)
        stats = EpisodeStats(1, device)
        obs = _as_tensor(env.reset(seed=seed)[0], device)
        _check_finite(agent, obs)
        writer = rec.open_writer(out, args.frameskip)
        writer.add(env.screens()[0], args.frameskip)
        done = torch.zeros(1, dtype=torch.bool, device=device)
        for _ in range(max_steps):
            obs, reward, done, info = _agent_step(env, agent, obs, greedy, generator)
            stats.record(reward, done, {"final_info": info})
            writer.add(env.screens()[0], args.frameskip)
            if bool(done[0]):
                break
        result = stats.take()
        result["unfinished"] = int(not bool(done[0]))
        if result["unfinished"]:  # the episode so far
            result["episode_return"] = float(stats.ret[0])
            result["episode_length"] = int(stats.len[0])
        return result
    except BaseException as e:
        if writer is not None and not isinstance(e, KeyboardInterrupt):  # interrupted: kept
            writer.abort()  # a file already at ``out`` stays as it was
            writer = None
        raise
    finally:
        if writer is not None:
            writer.close()
        env.close()


def _check_episode_args(max_steps: Any, seed: Any) -> None:
    _check_whole("max_steps", max_steps, 1)
    nesle.vector._check_seed(seed)  # the env's own words, before the env is made


def _check_finite(agent: Agent, obs: torch.Tensor) -> None:
    """``ValueError`` unless the agent's policy is finite on ``obs`` (an agent saved by a run
    that diverged is not; its actions could not be drawn)."""
    with torch.no_grad():
        logits = agent.actor(agent.features(obs))
    if not bool(torch.isfinite(logits).all()):
        raise ValueError(
            "this agent's policy is not finite on the env's first observation: its run diverged"
        )


def _check_fits(agent: Agent, env: Any) -> None:
    """``ValueError`` unless ``agent`` sees ``env``'s observations and picks its actions."""
    shape, n = tuple(env.single_observation_space.shape), int(env.single_action_space.n)
    if (tuple(agent.obs_shape), int(agent.num_actions)) != (shape, n):
        raise ValueError(
            f"this agent sees observations {tuple(agent.obs_shape)} and picks from "
            f"{agent.num_actions} actions, and this env's are {shape} and {n}: its obs, "
            "frame_stack or action_space are another run's"
        )


def train(args: Args, on_update: Callable[[dict[str, float]], None] | None = None) -> Result:
    """Train an agent with PPO; ``on_update`` gets each update's log row as it is made. The
    run seeds torch's generators with ``args.seed`` and leaves the caller's as they were, and
    torch's settings too (``torch_deterministic``, ``tf32``)."""
    check(args)
    check_out(args)
    backend = args.backend
    if backend == "auto":
        backend = "cuda" if nesle.vector.auto_cuda(args.device)[0] else "cpu"
    args = args.resolved(backend)
    check(args)  # again, with the backend's defaults filled in
    assert args.num_envs is not None and args.frame_stack is not None
    assert args.total_steps is not None

    # The env first: a backend that cannot run is its clear error, before torch touches CUDA.
    envs = make_env(args)
    # The generators the run draws from: the CPU's (the weights' initialization, the CPU
    # backend's sampling) and, on CUDA, its device's.
    gpus = [args.device] if backend == "cuda" else []
    deterministic = torch.backends.cudnn.deterministic
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        with torch.random.fork_rng(devices=gpus):
            torch.default_generator.manual_seed(args.seed)
            for gpu in gpus:
                with torch.cuda.device(gpu):
                    torch.cuda.manual_seed(args.seed)
            torch.backends.cudnn.deterministic = args.torch_deterministic
            torch.backends.cuda.matmul.allow_tf32 = args.tf32
            return _train(args, envs, on_update)
    finally:
        envs.close()
        torch.backends.cudnn.deterministic = deterministic
        torch.backends.cuda.matmul.allow_tf32 = tf32


def _resume(agent: Agent, optimizer: torch.optim.Optimizer, path: str) -> None:
    """Start from a saved agent's weights and optimizer state (``Args.resume``)."""
    device = next(agent.parameters()).device
    prior = load(path, device)
    mine = (agent.obs_shape, agent.num_actions, agent.network, agent.hidden)
    theirs = (prior.obs_shape, prior.num_actions, prior.network, prior.hidden)
    if mine != theirs:
        raise ValueError(
            f"cannot resume from {path}: its network (observations {theirs[0]}, {theirs[1]} "
            f"actions, {theirs[2]}, hidden {theirs[3]}) is not this run's (observations "
            f"{mine[0]}, {mine[1]} actions, {mine[2]}, hidden {mine[3]})"
        )
    if not all(bool(torch.isfinite(p).all()) for p in prior.parameters()):
        raise ValueError(f"cannot resume from {path}: its weights are not finite (its run diverged)")
    agent.load_state_dict(prior.state_dict())
    if prior.optimizer_state is not None:
        try:
            optimizer.load_state_dict(prior.optimizer_state)
            # torch takes moments of any shape here, and fails only at the first update's step.
            for p in agent.parameters():
                for name in ("exp_avg", "exp_avg_sq"):
                    moment = optimizer.state.get(p, {}).get(name)
                    if moment is not None and moment.shape != p.shape:
                        shapes = f"{tuple(moment.shape)} for a weight of {tuple(p.shape)}"
                        raise ValueError(f"{name} of shape {shapes}")
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ValueError(
                f"cannot resume from {path}: its optimizer state is not Adam's for this network "
                f"({type(e).__name__}: {e})"
            ) from None


def _sample_bytes(agent: Agent) -> int:
    """A bound on what one minibatch sample holds during an update: the observation's two float
    copies (the cast and the scaling), what autograd keeps from the forward, and as much again
    for the backward's gradients. Measured on a forward of two samples on the agent's device."""
    device = next(agent.parameters()).device
    weights = {p.data_ptr() for p in agent.parameters()}
    kept = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal kept
        if t.data_ptr() not in weights:
            kept += t.numel() * t.element_size()
        return t

    obs = torch.zeros((2, *agent.obs_shape), dtype=torch.uint8, device=device)
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        agent.act_and_value(obs, torch.zeros(2, dtype=torch.int64, device=device))
    return 2 * 4 * int(np.prod(agent.obs_shape)) + 2 * (kept // 2)


def gpu_memory_need(args: Args, agent: Agent) -> int:
    """Bytes of GPU memory a run's rollout and updates need (``args`` resolved): the rollout's
    columns and one minibatch's samples. Against torch's peaks over real runs (RAM and gray84,
    4,096-65,536 envs, 32-128 steps) it is 1.1-1.6x the memory reserved and 1.6-1.7x the memory
    allocated (docs/benchmarks/gpu-2026-12-05-o-lands.json)."""
    n, t_max = args.num_envs or 1, args.num_steps or 1
    width = int(np.prod(agent.obs_shape))
    rollout = t_max * n * (width + 5 * 4 + 8)  # uint8 observations; 5 float32 and 1 int64 columns
    minibatch = -(-t_max * n // args.num_minibatches)
    return rollout + minibatch * _sample_bytes(agent)


def _check_gpu_memory(args: Args, agent: Agent, device: torch.device) -> None:
    """A clear error, before the rollout is allocated, when the rollout and a minibatch's
    activations cannot fit in the GPU memory the env left free (rather than an out-of-memory
    error in the middle of the first update)."""
    need = gpu_memory_need(args, agent)
    free, _total = torch.cuda.mem_get_info(device)
    if need > 0.9 * free:
        gib = 2**30
        raise ValueError(
            f"PPO's rollout and updates need about {need / gib:.1f} GiB of GPU memory and "
            f"{free / gib:.1f} GiB are free: lower num_envs ({args.num_envs}) or num_steps "
            f"({args.num_steps}), or raise num_minibatches ({args.num_minibatches})"
        )


def _diverged(args: Args, update: int, saved: str) -> str:
    return (
        f"the run diverged in update {update}: the policy's outputs are not finite{saved}; lower "
        f"learning_rate ({args.learning_rate}) or the reward's scale"
    )


def _train(args: Args, envs: Any, on_update: Callable[[dict[str, float]], None] | None) -> Result:
    first_obs = envs.reset(seed=args.seed)[0]
    # The CUDA backend's step speaks torch on its GPU, the CPU backend's NumPy: the run goes
    # where the observations are.
    speaks_torch = isinstance(first_obs, torch.Tensor)
    device = first_obs.device if speaks_torch else torch.device("cpu")
    n, t_max = envs.num_envs, args.num_steps
    assert t_max is not None  # resolved
    obs_shape = envs.single_observation_space.shape
    try:
        agent = Agent(obs_shape, envs.single_action_space.n, NETWORKS[args.obs], args.hidden).to(device)
    except RuntimeError as e:  # the host's allocator, or the GPU's
        if "allocate" not in str(e):
            raise
        raise MemoryError(
            f"the agent's network (hidden {args.hidden}) does not fit in memory"
        ) from None
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    if args.resume is not None:
        _resume(agent, optimizer, args.resume)

    # The rollout, on the env's device.
    if device.type == "cuda":
        _check_gpu_memory(args, agent, device)
    try:
        obs = torch.zeros((t_max, n, *obs_shape), dtype=torch.uint8, device=device)
        actions = torch.zeros((t_max, n), dtype=torch.int64, device=device)
        logprobs = torch.zeros((t_max, n), device=device)
        rewards = torch.zeros((t_max, n), device=device)
        dones = torch.zeros((t_max, n), device=device)
        values = torch.zeros((t_max, n), device=device)
    except (RuntimeError, TypeError) as e:  # the host's allocator (the GPU's was asked above)
        if not any(word in str(e) for word in ("allocate", "verflow")):  # sizes past int64 too
            raise
        raise MemoryError(
            f"PPO's rollout needs about {gpu_memory_need(args, agent) / 2**30:.1f} GiB of host "
            f"memory, more than this machine can give: lower num_envs ({args.num_envs}) or "
            f"num_steps ({args.num_steps})"
        ) from None

    scaler = RewardScaler(n, args.gamma, device) if args.norm_reward else None
    stats = EpisodeStats(n, device)
    # Truncation only happens with a step limit; without one no step pays for V(final_obs).
    can_truncate = args.max_episode_steps is not None
    batch_size = n * t_max
    minibatch_size = max(batch_size // args.num_minibatches, 1)
    num_updates = -(-args.total_steps // batch_size)
    log: list[dict[str, float]] = []
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "args.json").write_text(json.dumps(_plain(dataclasses.asdict(args)), indent=1))
        if args.resume is None or not (out / "log.jsonl").exists():
            (out / "log.jsonl").write_text("")  # a resumed run's rows follow the earlier ones

    next_obs = _as_tensor(first_obs, device)
    steps = 0
    start = time.perf_counter()
    try:
        for update in range(1, num_updates + 1):
            lr = args.learning_rate
            if args.anneal_lr:
                lr *= 1.0 - (update - 1.0) / num_updates
            for group in optimizer.param_groups:
                group["lr"] = lr
            t_update = time.perf_counter()
            reward_sum = torch.zeros((), dtype=torch.float64, device=device)

            # Rollout: num_steps steps of every env, the policy sampled on the device.
            for t in range(t_max):
                obs[t] = next_obs
                with torch.no_grad():
                    action, logprob, _, value = agent.act_and_value(next_obs)
                actions[t], logprobs[t], values[t] = action, logprob, value
                next_obs, reward, terminated, truncated, info = envs.step(_env_actions(action))
                next_obs = _as_tensor(next_obs, device)
                reward = _as_tensor(reward, device, torch.float64)
                terminated = _as_tensor(terminated, device, torch.bool)
                truncated = _as_tensor(truncated, device, torch.bool)
                done = terminated | truncated
                stats.record(reward, done, info)
                reward_sum += reward.sum()
                scaled = scaler(reward, done) if scaler is not None else reward.float()
                # The bootstrap after the scaling: V is in the scaled reward's units. On the
                # device every step pays (no read to learn whether any was truncated).
                if can_truncate and (speaks_torch or bool(truncated.any())):
                    with torch.no_grad():
                        v_final = agent.value(_final_obs(info, truncated, next_obs))
                    scaled = scaled + args.gamma * torch.where(truncated, v_final, 0.0)
                rewards[t] = scaled
                dones[t] = done.float()
            steps += batch_size

            with torch.no_grad():
                advantages = gae(rewards, values, dones, agent.value(next_obs), args.gamma, args.gae_lambda)
                returns = advantages + values

            # Update: update_epochs passes of shuffled minibatches.
            b_obs = obs.reshape(batch_size, *obs_shape)
            b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
            b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
            clip_fracs = []
            for _epoch in range(args.update_epochs):
                order = torch.randperm(batch_size, device=device)
                for begin in range(0, batch_size, minibatch_size):
                    mb = order[begin : begin + minibatch_size]
                    _, new_logprob, entropy, new_value = agent.act_and_value(b_obs[mb], b_actions[mb])
                    log_ratio = new_logprob - b_logprobs[mb]
                    ratio = log_ratio.exp()
                    with torch.no_grad():
                        # Schulman's unbiased, positive estimator of KL(old || new).
                        approx_kl = ((ratio - 1) - log_ratio).mean()
                        clip_fracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean())
                    mb_adv = b_advantages[mb]
                    if args.norm_adv and mb_adv.numel() > 1:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    pg_loss = torch.max(
                        -mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                    ).mean()
                    if args.clip_vloss:
                        v_clipped = b_values[mb] + (new_value - b_values[mb]).clamp(
                            -args.clip_coef, args.clip_coef
                        )
                        v_loss = 0.5 * torch.max(
                            (new_value - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2
                        ).mean()
                    else:
                        v_loss = 0.5 * ((new_value - b_returns[mb]) ** 2).mean()
                    entropy_loss = entropy.mean()
                    loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()
                if args.target_kl is not None and approx_kl.item() > args.target_kl:
                    break

            # The log: one read of the device's numbers per update, with whether the updated
            # policy is still finite on the next rollout's first observations (a last step that
            # overflowed would otherwise be saved, and only the next forward would see it).
            with torch.no_grad():
                var_y = b_returns.var()
                explained = 1.0 - (b_returns - b_values).var() / var_y
                h = agent.features(next_obs)
                finite = torch.isfinite(agent.actor(h)).all() & torch.isfinite(agent.critic(h)).all()
            *numbers, finite = torch.stack(
                [pg_loss.detach(), v_loss.detach(), entropy_loss.detach(), approx_kl,
                 torch.stack(clip_fracs).mean(), explained, reward_sum / batch_size,
                 finite.double()]
            ).cpu().tolist()  # fmt: skip
            if not finite:
                raise ValueError(_diverged(args, update, " (these weights are not saved)"))
            now = time.perf_counter()
            row: dict[str, float] = {
                "update": update,
                "steps": steps,
                "seconds": now - start,
                "steps_per_second": batch_size / max(now - t_update, 1e-9),
                "learning_rate": lr,
                # reward_per_step: the raw reward's mean over the rollout's steps, unlike the
                # episodes' means blind to which episodes were short enough to end in it.
                **dict(zip(["policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction",
                            "explained_variance", "reward_per_step"], numbers)),  # fmt: skip
                **stats.take(),
            }
            log.append(row)
            if out is not None:
                with (out / "log.jsonl").open("a") as f:
                    f.write(json.dumps(_json_row(row)) + "\n")
            if on_update is not None:
                on_update(row)
            if out is not None and args.save_every and update % args.save_every == 0:
                save(agent, out / "agent.pt", args, optimizer)
    except KeyboardInterrupt:
        if out is not None:  # keep what was learned (mid-update: the weights as they are)
            save(agent, out / "agent.pt", args, optimizer)
        raise
    except (ValueError, RuntimeError) as e:
        # Outputs that overflow on observations the check above did not see: torch's check of
        # the logits (pages of tensor), or under ``python -O``, where that is off, the sampler's.
        if "found invalid values" not in str(e) and "probability tensor contains" not in str(e):
            raise
        raise ValueError(_diverged(args, update, "")) from None

    seconds = time.perf_counter() - start
    checkpoint = save(agent, out / "agent.pt", args, optimizer) if out is not None else None
    return Result(args, agent, steps, seconds, log, checkpoint)
