//! GPU throughput (protocols A and B: docs/benchmarks/README.md, "Protocols") and GPU-vs-nes-core parity.
//!
//! Throughput: `nesle-bench-gpu [--envs 1,4096,16384,65536,131072] [--protocols A,B] [--pixels]
//!   (--pixels: B+pixels, the 84x84 grayscale observation made on the device every step, by the
//!   line renderer as it draws (`Batch::step_gray84`); with `--gray-after` by a pass after the
//!   step, whose time is reported apart, `gray_s`, the device synchronized before and after it)
//!   [--rgb] (B+pixels with the full 240x256 RGB observation instead: each step's last frame
//!   drawn, then turned into RGB on the device by `Batch::rgb`, in the step's time)
//!   [--rom PATH] [--out bench-gpu.json]`: SMB from the first frame of World 1-1 in every env
//!   (`--boot-frames N`: any ROM, from power-on plus N frames without input),
//!   frameskip 4, 30 warm-up + 200 timed steps, device synchronized after every step;
//!   throughput = envs x timed steps / wall seconds. Under each row, the launch its steps took
//!   (`nesle_step`'s registers and stack, the block, blocks and warps an SM, the theoretical
//!   occupancy) and the device memory an env (`Batch::report`; in the JSON too, with the kernel
//!   image that loaded). Every 25 timed steps the rate of those steps goes to stderr (and to
//!   the JSON as `chunk_rates`): protocol B slows down as the episodes diverge, and a run cut
//!   short still says how far it got.
//!   `--regroup K`: every K steps the envs are put in order of their instructions in the last
//!   frame, so a warp's envs tend to run the same code (`BatchConfig::regroup_every`; default
//!   1, 0 turns it off; its time is part of the steps'; sorted on the device, or with
//!   `--regroup-on-host` read back and sorted on the host, `BatchConfig::regroup_on_device`),
//!   or (experiment) with `--regroup-by phase` of SMB's game phase (`Batch::set_order`, sorted
//!   on the host from every env's RAM; that time is reported apart, `regroup_s`).
//!   The batch regroups between the frames of a step too (`BatchConfig::regroup_frames`)
//!   unless `--no-regroup-frames`.
//!   After the warm-up the device sort's order is checked once against a sort on the host.
//!   With `--pixels` the last frame of each step is drawn after it ran, line by line
//!   (`BatchConfig::draw_lines`), unless `--draw-in-frame` (drawn while it runs).
//! Parity: `nesle-bench-gpu --parity N [--steps S] [--frameskip F] [--press-start K]
//!   [--rom PATH | --test-roms DIR]`: N envs of random inputs on the GPU (the first K steps: Start
//!   at random instead); after every step every env's FlatState must equal nes-core's. With
//!   `--regroup K` (K > 0) the GPU runs the envs in a new random order (`Batch::set_order`) every
//!   K steps; without it, the batch regroups by itself as in the throughput runs. `--pixels`
//!   compares every env's picture with nes-core's too (drawn line by line, or with
//!   `--draw-in-frame` while the frame runs); `--rgb` its RGB picture (`Batch::rgb`) too.

use nes_core::flat::{first_difference, FlatState};
use nes_core::Console;
use nes_cuda::picture::{GRAY_PIXELS, RGB_BYTES};
use nes_cuda::{Batch, BatchConfig, Error, RomImage, PIXELS_PER_ENV, REGROUP_EVERY};
use std::path::PathBuf;
use std::time::Instant;

// What nes-core's examples share: the ROM lookup (NESLE_ROM_DIR, then the folder `nesle roms
// fetch` fills), World 1-1's start, the seeded action generator and SIMPLE_MOVEMENT.
#[path = "../../../nes-core/examples/common/rng.rs"]
mod rng;
#[path = "../../../nes-core/examples/common/smb.rs"]
mod smb;
use rng::{Rng, SIMPLE_MOVEMENT};

const RIGHT: u8 = 0x80;
const START: u8 = 0x08;

struct Args {
    envs: Vec<usize>,
    protocols: Vec<char>,
    pixels: bool,
    /// `--rgb`: the observation is the full RGB picture (`Batch::rgb`), not the 84x84 gray one.
    rgb: bool,
    rom: Option<PathBuf>,
    out: PathBuf,
    warmup: usize,
    steps: usize,
    frameskip: u32,
    device: usize,
    parity: Option<usize>,
    parity_steps: usize,
    press_start: usize,
    test_roms: Option<PathBuf>,
    /// `--regroup`, if given.
    regroup: Option<usize>,
    regroup_by_phase: bool,
    /// `--regroup-on-host`.
    regroup_on_host: bool,
    /// Not `--no-regroup-frames`.
    regroup_frames: bool,
    /// Not `--draw-in-frame`.
    draw_lines: bool,
    /// `--gray-after`: the 84x84 pictures made by `Batch::gray84` after each step (its time
    /// reported apart) instead of by the line renderer as it draws (`Batch::step_gray84`).
    gray_after: bool,
    /// `--boot-frames N`: start from power-on plus N frames without input (any ROM) instead of
    /// SMB's World 1-1.
    boot_frames: Option<usize>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        envs: vec![1, 4096, 16384, 65536, 131072],
        protocols: vec!['A', 'B'],
        pixels: false,
        rgb: false,
        rom: None,
        out: PathBuf::from("bench-gpu.json"),
        warmup: 30,
        steps: 200,
        frameskip: 4,
        device: 0,
        parity: None,
        parity_steps: 60,
        press_start: 0,
        test_roms: None,
        regroup: None,
        regroup_by_phase: false,
        regroup_on_host: false,
        regroup_frames: true,
        draw_lines: true,
        gray_after: false,
        boot_frames: None,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        let positive = |v: String| match num(v.clone())? {
            0 => Err(format!("{flag} {v}: must be at least 1")),
            n => Ok(n),
        };
        match flag.as_str() {
            "--envs" => a.envs = val()?.split(',').map(|s| positive(s.to_string())).collect::<Result<_, _>>()?,
            "--protocols" => {
                a.protocols = val()?
                    .split(',')
                    .map(|p| match p.trim() {
                        "A" | "a" => Ok('A'),
                        "B" | "b" => Ok('B'),
                        other => Err(format!("--protocols: A or B, comma-separated, got '{other}'")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--pixels" => a.pixels = true,
            "--rgb" => {
                a.pixels = true;
                a.rgb = true;
            }
            "--rom" => a.rom = Some(PathBuf::from(val()?)),
            "--out" => a.out = PathBuf::from(val()?),
            "--warmup" => a.warmup = num(val()?)?,
            "--steps" => {
                let n = positive(val()?)?;
                a.steps = n;
                a.parity_steps = n;
            }
            "--frameskip" => {
                let v = val()?;
                a.frameskip = u32::try_from(positive(v.clone())?).map_err(|_| format!("--frameskip {v}: too many"))?
            }
            "--device" => a.device = num(val()?)?,
            "--parity" => a.parity = Some(positive(val()?)?),
            "--press-start" => a.press_start = num(val()?)?,
            "--test-roms" => a.test_roms = Some(PathBuf::from(val()?)),
            "--regroup" => a.regroup = Some(num(val()?)?),
            "--regroup-on-host" => a.regroup_on_host = true,
            "--no-regroup-frames" => a.regroup_frames = false,
            "--draw-in-frame" => a.draw_lines = false,
            "--gray-after" => a.gray_after = true,
            "--boot-frames" => a.boot_frames = Some(num(val()?)?),
            "--regroup-by" => {
                a.regroup_by_phase = match val()?.as_str() {
                    "phase" => true,
                    "instructions" => false,
                    other => return Err(format!("--regroup-by {other}: phase or instructions")),
                }
            }
            "-h" | "--help" => {
                println!(
                    "{}",
                    include_str!("nesle-bench-gpu.rs")
                        .lines()
                        .take_while(|l| l.starts_with("//!"))
                        .map(|l| l.trim_start_matches("//!"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (see --help)")),
        }
    }
    Ok(a)
}

fn smb_path(a: &Args) -> PathBuf {
    a.rom.clone().unwrap_or_else(|| smb::rom_path("super-mario-bros.nes"))
}

/// Timed steps per progress line.
const CHUNK: usize = 25;

/// The first frame of World 1-1's gameplay (`smb::world_1_1_of`) as the batch's start state.
fn world_1_1(rom: &[u8]) -> Result<(FlatState, usize), String> {
    let (c, frames) = smb::world_1_1_of(rom).map_err(|e| format!("{e}; --boot-frames N starts any other ROM"))?;
    Ok((c.to_flat(), frames))
}

/// Any ROM: the state after `frames` frames from power-on without input.
fn after_boot(rom: &[u8], frames: usize) -> Result<FlatState, String> {
    let mut c = Console::new(rom).map_err(|e| e.to_string())?;
    c.run_frames(frames);
    Ok(c.to_flat())
}

fn bench(a: &Args) -> Result<(), String> {
    let path = smb_path(a);
    let rom = std::fs::read(&path).map_err(|e| format!("{}: {e} (set --rom or NESLE_ROM_DIR)", path.display()))?;
    let (start, start_name) = match a.boot_frames {
        Some(f) => (after_boot(&rom, f)?, format!("{f} frames after power-on, no input")),
        None => {
            let (s, f) = world_1_1(&rom)?;
            (s, format!("World 1-1, first gameplay frame ({f} frames after power-on)"))
        }
    };
    println!("start: {start_name}; frameskip {}, {} warm-up + {} timed steps", a.frameskip, a.warmup, a.steps);
    let mut rows = Vec::new();
    let mut device = String::new();
    let mut kernels = String::new();
    println!("{:>9} {:>9} {:>7} {:>16} {:>10}", "protocol", "envs", "pixels", "env-steps/s", "wall s");
    for &p in &a.protocols {
        for &n in &a.envs {
            let image = RomImage::new(&rom).map_err(|e| e.to_string())?;
            let regroup = a.regroup.unwrap_or(REGROUP_EVERY as usize);
            // By instructions the batch regroups by itself; by phase the loop below does it.
            let every = if a.regroup_by_phase { 0 } else { regroup as u32 };
            let cfg = batch_config(a, every);
            let mut batch = match Batch::with_state(image, n, cfg, &start) {
                Ok(b) => b,
                Err(e @ Error::OutOfMemory { .. }) => {
                    println!("{:>9} {:>9} {:>7} {:>16}", p, n, a.pixels, format!("skipped: {e}"));
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            };
            device = batch.device_name();
            let mut rngs: Vec<Rng> = (0..n).map(Rng::for_env).collect();
            let mut actions = vec![RIGHT; n];
            // B+pixels: the 84x84 grayscale observation of every env, made on the device each
            // step; or with --rgb the full RGB one.
            let mut gray =
                if a.pixels && !a.rgb { Some(batch.alloc(n * GRAY_PIXELS).map_err(|e| e.to_string())?) } else { None };
            let mut rgb = if a.rgb { Some(batch.alloc(n * RGB_BYTES).map_err(|e| e.to_string())?) } else { None };
            // Returns the wall time, the rate of every CHUNK steps, the time spent regrouping by
            // phase and the time of the 84x84 pass.
            let mut run = |batch: &mut Batch, steps: usize, label: &str| -> Result<(f64, Vec<f64>, f64, f64), String> {
                let t = Instant::now();
                let mut regroup_s = 0.0;
                let mut gray_s = 0.0;
                let mut chunk_start = Instant::now();
                let mut chunks = Vec::new();
                for step in 0..steps {
                    if a.regroup_by_phase && regroup > 0 && step % regroup == 0 {
                        let t = Instant::now();
                        regroup_by_phase(batch)?;
                        regroup_s += t.elapsed().as_secs_f64();
                    }
                    if p == 'B' {
                        for (act, rng) in actions.iter_mut().zip(rngs.iter_mut()) {
                            *act = SIMPLE_MOVEMENT[(rng.next() % 7) as usize];
                        }
                    }
                    match gray.as_mut() {
                        Some(g) if !a.gray_after => batch.step_gray84(&actions, a.frameskip, g),
                        _ => batch.step(&actions, a.frameskip),
                    }
                    .map_err(|e| e.to_string())?;
                    if let Some(out) = rgb.as_mut() {
                        batch.rgb(out).map_err(|e| e.to_string())?;
                    }
                    // The step finished, then (with --gray-after) the 84x84 pass timed on its own.
                    batch.synchronize().map_err(|e| e.to_string())?;
                    if let Some(g) = gray.as_mut().filter(|_| a.gray_after) {
                        let t = Instant::now();
                        batch.gray84(g).map_err(|e| e.to_string())?;
                        batch.synchronize().map_err(|e| e.to_string())?;
                        gray_s += t.elapsed().as_secs_f64();
                    }
                    if (step + 1) % CHUNK == 0 {
                        let rate = (n * CHUNK) as f64 / chunk_start.elapsed().as_secs_f64();
                        eprintln!("  {p} {n} envs, {label} steps {}-{}: {rate:.0} env-steps/s", step + 1 - CHUNK, step);
                        chunks.push(rate);
                        chunk_start = Instant::now();
                    }
                }
                Ok((t.elapsed().as_secs_f64(), chunks, regroup_s, gray_s))
            };
            run(&mut batch, a.warmup, "warm-up")?;
            if !a.regroup_on_host {
                check_device_sort(&mut batch)?;
                if every == 0 {
                    // The check set an order; without regrouping the envs keep their own.
                    batch.set_order(None).map_err(|e| e.to_string())?;
                }
            }
            let (wall, chunks, regroup_s, gray_s) = run(&mut batch, a.steps, "timed")?;
            let chunk_rates = chunks.iter().map(|r| format!("{r:.1}")).collect::<Vec<_>>().join(", ");
            let rate = (n * a.steps) as f64 / wall;
            let faults = batch.states_to_host().map_err(|e| e.to_string())?.iter().filter(|s| s.cpu_fault != 0).count();
            // Envs whose last frame the line renderer left to a redraw (null: not drawn that way).
            let redrawn = batch.redrawn_to_host().map_err(|e| e.to_string())?;
            let redrawn_json = redrawn.map_or("null".to_string(), |k| k.to_string());
            // The envs of the last step the line renderer waited for: it ran beside the step (kernel-notes #166).
            let waits = batch.lines_waits_to_host().map_err(|e| e.to_string())?.unwrap_or(0);
            // Drawn steps (warm-up included) drawn line by line and while running (LinesPolicy).
            let policy = batch.lines_policy();
            let (by_lines, while_running) = policy.map_or((0, 0), |p| (p.by_lines, p.while_running));
            // Steps (warm-up included) whose device sort ran or was skipped (SortPolicy).
            let sorts = batch.sort_policy();
            let regrouped = if regroup > 0 && a.regroup_by_phase {
                format!(
                    "  (regrouped by phase every {regroup} steps: {regroup_s:.3} s of it; without: {:.0} env-steps/s)",
                    (n * a.steps) as f64 / (wall - regroup_s)
                )
            } else if sorts.skipped > 0 {
                format!("  (sorts: {} steps sorted, {} skipped)", sorts.sorted, sorts.skipped)
            } else {
                String::new()
            };
            let gray_note = if a.rgb {
                "RGB made after the step, in its time".to_string()
            } else if a.gray_after {
                format!("84x84 gray: {gray_s:.3} s of it")
            } else {
                "84x84 gray made in the step".to_string()
            };
            let grayed = match (a.pixels, redrawn) {
                (false, _) => String::new(),
                (true, None) => format!("  ({gray_note})"),
                (true, Some(k)) => format!(
                    "  ({gray_note}; last step: {k} envs redrawn, {waits} envs waited for by the drawing; drawn steps: {by_lines} line by line, {while_running} while running)"
                ),
            };
            println!(
                "{:>9} {:>9} {:>7} {:>16.0} {:>10.3}{}{regrouped}{grayed}",
                p,
                n,
                a.pixels,
                rate,
                wall,
                if faults > 0 { format!("  ({faults} envs halted by JAM)") } else { String::new() }
            );
            // The launch the protocol's steps took, and the memory an env, from the driver.
            let rep = batch.report().map_err(|e| e.to_string())?;
            let st = &rep.step;
            println!(
                "          nesle_step: {} registers, {} B of stack, blocks of {}, {} an SM = {} of {} warps ({:.0}% occupancy); {} B an env",
                st.registers, st.local_bytes, st.block, st.blocks_per_sm, st.warps_per_sm(), st.max_warps_per_sm, 100.0 * st.occupancy(), rep.bytes_per_env()
            );
            kernels = rep.image.clone();
            rows.push(format!(
                "    {{\"protocol\": \"{p}\", \"envs\": {n}, \"pixels\": {}, \"observation\": \"{}\", \"env_steps_per_s\": {rate:.1}, \"wall_s\": {wall:.4}, \"timed_steps\": {}, \"warmup_steps\": {}, \"frameskip\": {}, \"jam_envs\": {faults}, \"chunk_rates\": [{chunk_rates}], \"regroup_every\": {}, \"regroup_by\": \"{}\", \"regroup_frames\": {}, \"regroup_s\": {regroup_s:.4}, \"gray_s\": {gray_s:.4}, \"drawn\": \"{}\", \"redrawn_last_step\": {redrawn_json}, \"lines_waits_last_step\": {waits}, \"steps_drawn_by_lines\": {by_lines}, \"steps_drawn_while_running\": {while_running}, \"steps_sorted\": {}, \"steps_sort_skipped\": {}, \"step_registers\": {}, \"step_block\": {}, \"step_blocks_per_sm\": {}, \"occupancy\": {:.4}, \"bytes_per_env\": {}}}",
                a.pixels, if a.rgb { "rgb" } else if a.pixels { "gray84" } else { "none" }, a.steps, a.warmup, a.frameskip, regroup,
                if a.regroup_by_phase { "phase" } else if a.regroup_on_host { "instructions, on the host" } else { "instructions, on the device" },
                a.regroup_frames,
                if !a.pixels { "no pictures" } else if a.draw_lines { "line by line after the frame" } else { "while the frame runs" },
                sorts.sorted,
                sorts.skipped,
                st.registers,
                st.block,
                st.blocks_per_sm,
                st.occupancy(),
                rep.bytes_per_env()
            ));
        }
    }
    let json = format!(
        "{{\n  \"device\": \"{}\",\n  \"image\": \"{}\",\n  \"rom\": \"{}\",\n  \"start\": \"{start_name}\",\n  \"results\": [\n{}\n  ]\n}}\n",
        device.replace('"', "'"),
        kernels.replace('"', "'"),
        path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default(),
        rows.join(",\n")
    );
    std::fs::write(&a.out, json).map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!("wrote {}", a.out.display());
    Ok(())
}

/// `--regroup`: runs the envs in order of SMB's game phase (OperMode $0770,
/// GameEngineSubroutine $000E, player float state $001D, then the position $006D/$0086),
/// sorted on the host from every env's RAM.
fn regroup_by_phase(batch: &mut Batch) -> Result<(), String> {
    let ram = batch.ram_to_host().map_err(|e| e.to_string())?;
    let key = |e: u32| {
        let r = &ram[e as usize * 0x800..][..0x800];
        (r[0x770], r[0x0e], r[0x1d], r[0x6d], r[0x86])
    };
    let mut order: Vec<u32> = (0..batch.n_envs() as u32).collect();
    order.sort_by_key(|&e| key(e));
    batch.set_order(Some(&order)).map_err(|e| e.to_string())?;
    batch.synchronize().map_err(|e| e.to_string())
}

/// Sorts the envs on the device by their regrouping keys (`Batch::regroup_device_sort`) and
/// checks the order against the host's sort (`nes_cuda::regroup_order`).
fn check_device_sort(batch: &mut Batch) -> Result<(), String> {
    let ran = batch.sort_keys_to_host().map_err(|e| e.to_string())?;
    batch.regroup_device_sort().map_err(|e| e.to_string())?;
    let got = batch.order_to_host().map_err(|e| e.to_string())?;
    let want = nes_cuda::regroup_order(&ran);
    match got {
        Some(got) if got == want => Ok(()),
        _ => Err(format!("the device sort of {} envs differs from the host's", ran.len())),
    }
}

/// The batch the flags ask for, regrouping every `regroup_every` steps.
fn batch_config(a: &Args, regroup_every: u32) -> BatchConfig {
    BatchConfig {
        device: a.device,
        pixels: a.pixels,
        regroup_every,
        regroup_on_device: !a.regroup_on_host,
        regroup_frames: a.regroup_frames,
        draw_lines: a.draw_lines,
    }
}

/// Why a ROM's parity run did not pass: the GPU and nes-core differ, or the run could not be
/// made (no GPU or kernels, too little memory, a ROM nes-core refuses, a CUDA error).
enum Failed {
    Mismatch(String),
    CannotRun(String),
}

fn cannot_run(e: impl ToString) -> Failed {
    Failed::CannotRun(e.to_string())
}

/// Runs `n` envs of `rom` on the GPU and on nes-core; compares every state after each step.
fn parity_one(a: &Args, label: &str, rom: &[u8], n: usize, smb: bool) -> Result<String, Failed> {
    let image = RomImage::new(rom).map_err(cannot_run)?;
    let mut start = image.power_on();
    start.ppu_render_pixels = a.pixels as u8;
    // A random order every K steps (`--regroup K`) in place of the batch's own regrouping.
    let shuffle_every = a.regroup.unwrap_or(0);
    let every = if a.regroup.is_some() { 0 } else { REGROUP_EVERY };
    let config = batch_config(a, every);
    let mut batch = Batch::with_state(image.clone(), n, config, &start).map_err(cannot_run)?;
    let mut cores: Vec<Console> = (0..n).map(|_| Console::new(rom).unwrap()).collect();
    for c in &mut cores {
        c.set_render(a.pixels);
    }
    let mut rngs: Vec<Rng> = (0..n).map(|i| Rng::seeded(i as u32 + 7)).collect();
    let threads = std::thread::available_parallelism().map_or(4, |p| p.get());
    let mut shuffle = Rng::seeded(12345);
    for step in 0..a.parity_steps {
        if shuffle_every > 0 && step % shuffle_every == 0 {
            let mut order: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                order.swap(i, shuffle.next() as usize % (i + 1));
            }
            batch.set_order(Some(&order)).map_err(cannot_run)?;
        }
        let actions: Vec<u8> = rngs
            .iter_mut()
            .map(|r| {
                if step < a.press_start {
                    // Start pressed at random (p = 0.3), as the Python GPU tests drive the boot.
                    if r.next() % 10 < 3 {
                        START
                    } else {
                        0
                    }
                } else if smb && a.press_start == 0 && (10..12).contains(&step) {
                    START
                } else if smb {
                    SIMPLE_MOVEMENT[(r.next() % 7) as usize]
                } else {
                    (r.next() >> 9) as u8
                }
            })
            .collect();
        if shuffle_every == 0 && !a.regroup_on_host {
            check_device_sort(&mut batch).map_err(|e| Failed::Mismatch(format!("{label}: step {step}: {e}")))?;
        }
        batch.step(&actions, a.frameskip).map_err(cannot_run)?;
        let chunk = n.div_ceil(threads);
        std::thread::scope(|s| {
            for (cs, acts) in cores.chunks_mut(chunk).zip(actions.chunks(chunk)) {
                s.spawn(move || {
                    for (c, &act) in cs.iter_mut().zip(acts) {
                        c.set_buttons(0, act);
                        for _ in 0..a.frameskip {
                            c.run_frame();
                        }
                    }
                });
            }
        });
        let gpu = batch.states_to_host().map_err(cannot_run)?;
        for (e, (c, g)) in cores.iter().zip(&gpu).enumerate() {
            if let Some((field, i)) = first_difference(&c.to_flat(), g) {
                return Err(Failed::Mismatch(format!(
                    "{label}: env {e} step {step}: first differing field `{field}`[{i}]"
                )));
            }
        }
        if a.pixels {
            let px = batch.pixels_to_host().map_err(cannot_run)?;
            for (e, c) in cores.iter().enumerate() {
                let gpu_px = &px[e * PIXELS_PER_ENV..(e + 1) * PIXELS_PER_ENV];
                if let Some(i) = gpu_px.iter().zip(c.pixels().iter()).position(|(g, c)| g != c) {
                    return Err(Failed::Mismatch(format!("{label}: env {e} step {step}: pixel {i} differs")));
                }
            }
        }
        if a.rgb {
            let rgb = batch.rgb_to_host().map_err(cannot_run)?;
            let mut want = vec![0u8; RGB_BYTES];
            for (e, c) in cores.iter().enumerate() {
                nes_core::palette::indices_to_rgb(c.pixels(), &mut want);
                if let Some(i) = rgb[e * RGB_BYTES..(e + 1) * RGB_BYTES].iter().zip(&want).position(|(g, w)| g != w) {
                    return Err(Failed::Mismatch(format!("{label}: env {e} step {step}: RGB byte {i} differs")));
                }
            }
        }
    }
    let what = if a.rgb {
        " (and pictures, and RGB)"
    } else if a.pixels {
        " (and pictures)"
    } else {
        ""
    };
    Ok(format!("{label}: {n} envs x {} steps x {} frames identical{what}", a.parity_steps, a.frameskip))
}

fn parity(a: &Args, n: usize) -> Result<(), String> {
    let mut roms: Vec<(String, Vec<u8>, bool)> = Vec::new();
    if let Some(dir) = &a.test_roms {
        let manifest =
            std::fs::read_to_string(dir.join("MANIFEST.tsv")).map_err(|e| format!("{}: {e}", dir.display()))?;
        for line in manifest.lines().skip(1).filter(|l| l.contains("\tiNES\t") || l.contains("\tNES2.0\t")) {
            let path = line.split('\t').next().unwrap_or_default();
            let bytes = std::fs::read(dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
            roms.push((path.to_string(), bytes, false));
        }
    } else {
        let path = smb_path(a);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        roms.push((path.file_name().unwrap_or_default().to_string_lossy().to_string(), bytes, true));
    }
    let (mut differ, mut errors) = (0, Vec::new());
    for (label, bytes, smb) in &roms {
        match parity_one(a, label, bytes, n, *smb) {
            Ok(msg) => println!("ok        {msg}"),
            Err(Failed::Mismatch(msg)) => {
                differ += 1;
                println!("MISMATCH  {msg}");
            }
            Err(Failed::CannotRun(msg)) => {
                println!("ERROR     {label}: {msg}");
                errors.push(msg);
            }
        }
    }
    println!("GPU parity: {} of {} ROMs identical", roms.len() - differ - errors.len(), roms.len());
    match (differ, errors.first()) {
        (0, None) => Ok(()),
        // Not a difference: the GPU, its kernels or its memory could not run the comparison.
        (0, Some(first)) => Err(format!("{} ROMs could not run: {first}", errors.len())),
        _ => Err(format!("{differ} ROMs differ between the GPU and nes-core ({} could not run)", errors.len())),
    }
}

fn main() {
    let result = parse_args(std::env::args().skip(1)).and_then(|a| match a.parity {
        Some(n) => parity(&a, n),
        None => bench(&a),
    });
    if let Err(e) = result {
        eprintln!("nesle-bench-gpu: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        parse_args(line.split_whitespace().map(String::from))
    }

    #[test]
    fn protocols_are_a_or_b_and_counts_are_at_least_one() {
        assert_eq!(parse("--protocols b,A").unwrap().protocols, vec!['B', 'A']);
        assert!(parse("--protocols b,x").err().unwrap().contains("got 'x'"));
        assert!(parse("--protocols ,").is_err());
        for bad in ["--envs 4,0", "--parity 0", "--steps 0", "--frameskip 0", "--frameskip 4294967296"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("--frameskip 8").unwrap().frameskip, 8);
    }
}
