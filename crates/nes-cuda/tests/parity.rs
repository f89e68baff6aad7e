//! CPU-vs-kernel parity: nes-core and the kernels compiled as host C++ step the same consoles
//! with the same inputs; the whole FlatState (and the picture) must match after every frame.
//! On a mismatch the report names the ROM, env, frame and first differing field.
//!
//! Test ROMs: `../shared/test-roms` beside the repository (override `NESLE_TEST_ROMS`).
//! SMB: `~/.cache/nesle/roms/super-mario-bros.nes` (override the folder with `NESLE_ROM_DIR`).
//! Frames per ROM: `NESLE_PARITY_FRAMES` (default 240).

use nes_core::flat::{first_difference, FlatState};
use nes_core::Console;
use nes_cuda::{host, RomImage, PIXELS_PER_ENV};

mod common;
use common::rng::SIMPLE_MOVEMENT;
use common::Rng;
// nes-core's hand-assembled test ROMs (status polls, OAM DMAs all through the frame, with the
// DMC fetching inside them).
#[path = "../../nes-core/tests/common/mod.rs"]
mod core_roms;
use std::path::PathBuf;

const ENVS: usize = 4;

fn test_rom_dir() -> PathBuf {
    match std::env::var("NESLE_TEST_ROMS") {
        Ok(d) => PathBuf::from(d),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/test-roms"),
    }
}

fn game_rom(name: &str) -> Result<Vec<u8>, String> {
    let path = common::rom_path(name);
    std::fs::read(&path).map_err(|e| {
        format!(
            "{} missing ({e}): the Python side fetches it (gym-super-mario-bros 7.4.0 wheel); \
             set NESLE_ROM_DIR to its folder",
            path.display()
        )
    })
}

fn frames() -> usize {
    std::env::var("NESLE_PARITY_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(240)
}

/// Steps `ENVS` consoles of `rom` on both sides for `frames` frames, `frameskip` frames per
/// call, with inputs from `input(env, step, rng)`. Returns the first mismatch, if any.
fn run_parity(
    label: &str,
    rom: &[u8],
    steps: usize,
    frameskip: u32,
    input: &dyn Fn(usize, usize, &mut Rng) -> u8,
) -> Result<(), String> {
    let image = RomImage::new(rom).map_err(|e| format!("{label}: {e}"))?;
    let mut cores: Vec<Console> = (0..ENVS).map(|_| Console::new(rom).unwrap()).collect();
    let mut states: Vec<FlatState> = cores.iter().map(|c| c.to_flat()).collect();
    let mut rngs: Vec<Rng> = (0..ENVS).map(|e| Rng(0x9e37_79b9 ^ (e as u32 + 1).wrapping_mul(0x85eb_ca6b))).collect();
    let mut pixels = vec![0u8; ENVS * PIXELS_PER_ENV];
    let mut actions_log: Vec<Vec<u8>> = Vec::new();
    for step in 0..steps {
        let actions: Vec<u8> = (0..ENVS).map(|e| input(e, step, &mut rngs[e])).collect();
        actions_log.push(actions.clone());
        for (c, &a) in cores.iter_mut().zip(&actions) {
            c.set_buttons(0, a);
            for _ in 0..frameskip {
                c.run_frame();
            }
        }
        // Pictures every other step: the kernels' steps with and without one take different
        // paths (whole lines without fetches, skipped tiles), and both must leave the states
        // exact.
        let draw = step % 2 == 0;
        let picture = if draw { Some(&mut pixels[..]) } else { None };
        host::step(&mut states, &image, &actions, frameskip, picture).map_err(|e| format!("{label}: {e}"))?;
        for e in 0..ENVS {
            let want = cores[e].to_flat();
            if let Some((field, i)) = first_difference(&want, &states[e]) {
                let detail = pinpoint(&image, rom, &actions_log, e, frameskip);
                return Err(format!(
                    "{label}: env {e} step {step} (frame {}): first differing field `{field}`[{i}] \
                     (nes-core pc={:04x} cycles={} / kernel pc={:04x} cycles={})",
                    (step + 1) * frameskip as usize,
                    want.cpu_pc,
                    want.bus_cycles,
                    states[e].cpu_pc,
                    states[e].bus_cycles
                ) + &detail);
            }
            if !draw {
                continue;
            }
            let px = &pixels[e * PIXELS_PER_ENV..(e + 1) * PIXELS_PER_ENV];
            if let Some(at) = px.iter().zip(cores[e].pixels().iter()).position(|(a, b)| a != b) {
                return Err(format!(
                    "{label}: env {e} step {step}: pixel ({}, {}) differs: kernel {} nes-core {}",
                    at % 256,
                    at / 256,
                    px[at],
                    cores[e].pixels()[at]
                ));
            }
        }
    }
    Ok(())
}

/// Replays env `e` instruction by instruction on both sides and names the first instruction
/// after which the states differ.
fn pinpoint(image: &RomImage, rom: &[u8], actions: &[Vec<u8>], e: usize, frameskip: u32) -> String {
    let mut core = Console::new(rom).unwrap();
    let mut flat = core.to_flat();
    let mut instr = 0u64;
    for (step, a) in actions.iter().enumerate() {
        core.set_buttons(0, a[e]);
        flat.pad_buttons[0] = a[e];
        for _ in 0..frameskip {
            loop {
                let before = core.to_flat();
                core.step();
                host::cpu_step(&mut flat, image).unwrap();
                instr += 1;
                // run_frame's frame_complete bookkeeping is the only thing outside cpu.step.
                let mut want = core.to_flat();
                want.ppu_frame_complete = flat.ppu_frame_complete;
                if let Some((field, i)) = first_difference(&want, &flat) {
                    return format!(
                        "\n  first diverging instruction: #{instr} in step {step}, opcode {:02x} at pc {:04x} \
                         (line {} dot {}): `{field}`[{i}]",
                        core.peek(before.cpu_pc),
                        before.cpu_pc,
                        before.ppu_scanline,
                        before.ppu_dot
                    );
                }
                if flat.ppu_frame_complete != 0 {
                    flat.ppu_frame_complete = 0;
                    let mut c2 = core.to_flat();
                    c2.ppu_frame_complete = 0;
                    core = Console::from_flat(&c2, core.cart()).unwrap();
                    break;
                }
            }
        }
    }
    String::new()
}

fn random_buttons(_env: usize, _step: usize, rng: &mut Rng) -> u8 {
    (rng.next() >> 13) as u8
}

#[test]
fn every_test_rom_runs_identically_on_nes_core_and_the_host_compiled_kernels() {
    let dir = test_rom_dir();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv"))
        .unwrap_or_else(|e| panic!("test ROMs missing at {} ({e}); set NESLE_TEST_ROMS", dir.display()));
    let roms: Vec<String> = manifest
        .lines()
        .skip(1)
        .filter(|l| l.contains("\tiNES\t") || l.contains("\tNES2.0\t"))
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert!(roms.len() > 40, "manifest lists only {} iNES ROMs", roms.len());
    let n = frames();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..std::thread::available_parallelism().map_or(2, |p| p.get()).min(4) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = roms.get(i) else { break };
                let rom = std::fs::read(dir.join(path)).unwrap();
                let r = run_parity(path, &rom, n, 1, &random_buttons);
                results.lock().unwrap().push((path.clone(), r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort();
    let mut failures = Vec::new();
    println!("\nparity over {n} frames x {ENVS} envs:");
    for (path, r) in &results {
        match r {
            Ok(()) => println!("  ok        {path}"),
            Err(e) => {
                println!("  MISMATCH  {e}");
                failures.push(e.clone());
            }
        }
    }
    println!("{} of {} ROMs identical", results.len() - failures.len(), results.len());
    assert!(failures.is_empty(), "parity failures:\n{}", failures.join("\n"));
}

#[test]
fn the_hand_assembled_fast_forward_roms_run_identically() {
    // The ROMs nes-core's fast-forward tests use (crates/nes-core/tests/fast_forward.rs): they
    // reach what the test ROMs and games rarely do, e.g. OAM DMAs starting all through vertical
    // blank with DMC fetches inside them.
    for (name, rom) in [
        ("status polls", core_roms::status_poll_rom()),
        ("OAM DMA", core_roms::oam_dma_rom()),
        ("OAM DMA with the DMC", core_roms::oam_dma_dmc_rom()),
    ] {
        if let Err(e) = run_parity(name, &rom, 600, 1, &random_buttons) {
            panic!("{e}");
        }
    }
}

/// An NROM program whose work lives in PRG RAM (8 KiB, implied by its iNES 1.0 header): each
/// pass of its loop adds `$6000,Y`, `$7F00,Y`, the A button and the NMI's frame count, stores
/// the sum to `$6000,Y` and `$0300,Y` and a mix of it to `$7F00,Y`, then moves Y on. A pass is
/// ~40 cycles, so each step's first passes read what the step before wrote: the kernels keep
/// PRG RAM in the packed state between steps (kernel-notes #44), and a read or write that went
/// to the step's local copy instead shows in RAM or PRG RAM.
fn prg_ram_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,       // SEI CLD LDX #$FF TXS
        0xa9, 0x80, 0x8d, 0x00, 0x20,       // $C005: LDA #$80 STA $2000 (NMI on, each pass)
        0xa9, 0x01, 0x8d, 0x16, 0x40,       // LDA #1 STA $4016
        0xa9, 0x00, 0x8d, 0x16, 0x40,       // LDA #0 STA $4016 (strobe)
        0xad, 0x16, 0x40, 0x29, 0x01,       // LDA $4016 AND #1 (A button)
        0x18, 0x79, 0x00, 0x60,             // CLC ADC $6000,Y
        0x79, 0x00, 0x7f, 0x65, 0x10,       // ADC $7F00,Y ADC $10
        0x99, 0x00, 0x60, 0x49, 0xa5,       // STA $6000,Y EOR #$A5
        0x99, 0x00, 0x7f, 0x99, 0x00, 0x03, // STA $7F00,Y STA $0300,Y
        0xc8, 0x4c, 0x05, 0xc0,             // INY JMP $C005
        0xe6, 0x10, 0x40,                   // $C031 NMI: INC $10 RTI
    ];
    assert_eq!(code.len(), 0x34, "the vectors below point into this layout");
    core_roms::nrom(code, 0xc031, 0xc000)
}

#[test]
fn a_rom_that_works_in_prg_ram_runs_identically_across_steps() {
    if let Err(e) = run_parity("PRG RAM", &prg_ram_rom(), 120, 1, &random_buttons) {
        panic!("{e}");
    }
}

/// An NROM program for the kernels' quiet path (kernels/quiet.cuh), which runs instructions
/// that touch only RAM and PRG ROM on registers and must leave everything as the full path
/// would. Each pass jumps into open bus twice (`JMP $4020`, `JMP ($0200)`): the opcode fetched
/// there is the data bus, the high byte the jump read last ($40, an RTI back into the program),
/// so a quiet instruction that left the wrong byte on the bus sends the program elsewhere. Then
/// read-modify-writes, zero-page, absolute and indirect indexed modes whose page crossings reach
/// ROM and, through `($30),Y` at $1FF0 + Y, the PPU's registers (not quiet: the full path), a
/// `($34,X)` read through whatever zero page holds, JSR/RTS and the stack, and branches.
fn quiet_path_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,                   // SEI CLD LDX #$FF TXS
        0xa9, 0x80, 0x8d, 0x00, 0x20,                   // LDA #$80 STA $2000 (NMI on)
        0xa9, 0x20, 0x8d, 0x00, 0x02,                   // LDA #$20 STA $0200
        0xa9, 0x40, 0x8d, 0x01, 0x02,                   // LDA #$40 STA $0201 (a pointer to $4020)
        0xa9, 0xf0, 0x85, 0x30, 0xa9, 0x1f, 0x85, 0x31, // LDA #$F0 STA $30 LDA #$1F STA $31 ($1FF0)
        0xa9, 0x80, 0x85, 0x32, 0xa9, 0x05, 0x85, 0x33, // LDA #$80 STA $32 LDA #$05 STA $33 ($0580)
        0xa9, 0xc0, 0x48, 0xa9, 0x2e, 0x48, 0x08,       // $C024: LDA #$C0 PHA LDA #$2E PHA PHP
        0x4c, 0x20, 0x40,                               // JMP $4020 (RTI to $C02E)
        0xa9, 0xc0, 0x48, 0xa9, 0x38, 0x48, 0x08,       // $C02E: LDA #$C0 PHA LDA #$38 PHA PHP
        0x6c, 0x00, 0x02,                               // JMP ($0200) (RTI to $C038)
        0xe6, 0x10, 0xa6, 0x10, 0xa4, 0x10,             // $C038: INC $10 LDX $10 LDY $10
        0xb5, 0x20, 0x7d, 0xf0, 0x02,                   // LDA $20,X ADC $02F0,X
        0x9d, 0x80, 0x03, 0x5e, 0x00, 0x03, 0x36, 0x40, // STA $0380,X LSR $0300,X ROL $40,X
        0xb1, 0x30, 0x91, 0x32,                         // LDA ($30),Y STA ($32),Y
        0xa1, 0x34, 0x59, 0x00, 0xc0,                   // LDA ($34,X) EOR $C000,Y
        0x20, 0x60, 0xc0,                               // JSR $C060
        0x90, 0x02, 0xe5, 0x12,                         // BCC +2 SBC $12
        0x10, 0xc7, 0x4c, 0x24, 0xc0,                   // BPL $C024 JMP $C024
        0x48, 0x8a, 0x48, 0x68, 0xaa, 0x68, 0x60,       // $C060: PHA TXA PHA PLA TAX PLA RTS
        0xe6, 0x12, 0x40,                               // $C067 NMI: INC $12 RTI
    ];
    assert_eq!(code.len(), 0x6a, "the jumps above point into this layout");
    core_roms::nrom(code, 0xc067, 0xc000)
}

#[test]
fn the_quiet_path_rom_runs_identically() {
    if let Err(e) = run_parity("quiet path", &quiet_path_rom(), 300, 1, &random_buttons) {
        panic!("{e}");
    }
}

/// An NROM program without PRG RAM (an NES 2.0 header that declares none), so $6000-$7FFF is
/// open bus: from $8012 (the mirror of $C012) a taken `BNE` crosses back into $7FFD. Its last
/// read is the uncarried target, $80FD, whose byte ($E8, `INX`) is left on the bus; the CPU then
/// fetches opcodes from open bus, runs that byte three times and reaches $8000 again (`JMP`
/// back into the loop, which stores X and Y). A quiet path that left another byte on the bus
/// (the one after the branch, $C8, `INY`) would count Y instead of X.
fn branch_into_open_bus_rom() -> Vec<u8> {
    let mut code = vec![0xeau8; 0x100];
    #[rustfmt::skip]
    let parts: [(usize, &[u8]); 5] = [
        (0x000, &[0x4c, 0x20, 0xc0]),                         // $8000: JMP $C020
        (0x003, &[0x78, 0xd8, 0xa2, 0xff, 0x9a,               // reset: SEI CLD LDX #$FF TXS
                  0xa2, 0x00, 0xa0, 0x00, 0x4c, 0x10, 0x80]), // LDX #0 LDY #0 JMP $8010
        (0x010, &[0xa9, 0x01, 0xd0, 0xe9, 0xc8]),             // $8010: LDA #1 BNE $7FFD; $C8
        (0x020, &[0x86, 0x10, 0x84, 0x11, 0xe6, 0x12,         // STX $10 STY $11 INC $12
                  0x4c, 0x10, 0x80]),                         // JMP $8010
        (0x0fd, &[0xe8]),                                     // $80FD: the uncarried target
    ];
    for (at, bytes) in parts {
        code[at..at + bytes.len()].copy_from_slice(bytes);
    }
    let mut rom = core_roms::nrom(&code, 0xc003, 0xc003);
    rom[7] = 0x08; // NES 2.0: byte 10 (0) declares no PRG RAM
    rom
}

#[test]
fn a_branch_into_open_bus_runs_the_byte_its_last_read_left() {
    let rom = branch_into_open_bus_rom();
    let mut core = Console::new(&rom).unwrap();
    core.run_frames(2);
    assert!(core.ram()[0x12] > 0 && core.ram()[0x11] == 0, "the loop runs, counting X, not Y");
    if let Err(e) = run_parity("branch into open bus", &rom, 300, 1, &random_buttons) {
        panic!("{e}");
    }
}

/// A UxROM program (four 16 KiB banks; the last fixed at $C000) whose subroutine at $BFFD, in
/// the switchable bank, ends with an instruction that runs on into the fixed bank: bank 0's
/// `LDA $0200` at $BFFE takes its high byte from $C000, bank 1's `LDA #$02` at $BFFF its operand.
/// In the ROM image the bytes after those are the next banks' first ($03, $44), which is what an
/// instruction read as one run of ROM bytes would see: the kernels' code words (quiet.cuh
/// `cpu_code_word`) must leave such an instruction to the full path. The loop switches banks
/// each pass and keeps a sum of what the subroutines loaded.
fn straddle_rom() -> Vec<u8> {
    let mut prg = vec![0xeau8; 4 * 0x4000];
    prg[0x3ffd..0x4000].copy_from_slice(&[0xea, 0xad, 0x00]); // bank 0: NOP, LDA $0200 (to $C000)
    prg[0x7ffd..0x8000].copy_from_slice(&[0xea, 0xea, 0xa9]); // bank 1: NOP NOP, LDA #$02 (to $C000)
    prg[0x4000] = 0x03; // the ROM image's byte after bank 0
    prg[0x8000] = 0x44; // and after bank 1
    #[rustfmt::skip]
    let fixed: &[u8] = &[
        0x02, 0x60,                   // $C000: the byte both end with; $C001: RTS
        0x78, 0xd8, 0xa2, 0xff, 0x9a, // $C002: SEI CLD LDX #$FF TXS
        0xa9, 0x11, 0x8d, 0x00, 0x02, // LDA #$11 STA $0200
        0xa9, 0x22, 0x8d, 0x00, 0x03, // LDA #$22 STA $0300
        0xa9, 0x80, 0x8d, 0x00, 0x20, // LDA #$80 STA $2000 (NMI on)
        0xe6, 0x10,                   // $C016: INC $10
        0xa5, 0x10, 0x29, 0x01, 0xa8, // LDA $10 AND #1 TAY
        0xb9, 0x30, 0xc0,             // LDA $C030,Y
        0x99, 0x30, 0xc0,             // STA $C030,Y (bank Y at $8000)
        0x20, 0xfd, 0xbf,             // JSR $BFFD
        0x99, 0x20, 0x00,             // STA $0020,Y (what it loaded)
        0x65, 0x11, 0x85, 0x11,       // ADC $11 STA $11
        0x4c, 0x16, 0xc0,             // JMP $C016
        0x00, 0x01,                   // $C030: the banks
        0x40,                         // $C032 NMI: RTI
    ];
    prg[0xc000..0xc000 + fixed.len()].copy_from_slice(fixed);
    for (at, v) in [(0xfffa, 0xc032u16), (0xfffc, 0xc002), (0xfffe, 0xc032)] {
        prg[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    // iNES: 4 x 16 KiB PRG, CHR RAM, mapper 2.
    let mut rom = vec![b'N', b'E', b'S', 0x1a, 4, 0, 0x20, 0];
    rom.resize(16, 0);
    rom.extend_from_slice(&prg);
    rom
}

#[test]
fn an_instruction_that_runs_into_a_window_of_another_bank_runs_identically() {
    // The premise: nes-core loads what the fixed bank holds.
    let rom = straddle_rom();
    let mut c = Console::new(&rom).unwrap();
    for _ in 0..3 {
        c.run_frame();
    }
    let ram = c.ram();
    assert_eq!(ram[0x20], 0x11, "bank 0's LDA $0200");
    assert_eq!(ram[0x21], 0x02, "bank 1's LDA #$02");
    if let Err(e) = run_parity("instructions across windows", &rom, 120, 1, &random_buttons) {
        panic!("{e}");
    }
}

/// An NROM program for the kernels' run of empty lines at once (`ppu_skip_empty_lines`), which
/// may only start after a line with no sprite in range. Sprite 0 (Y = the frame count, so it
/// sweeps every line) is transparent as an 8x8 sprite (tile 1 at $0000), but as an 8x16 sprite
/// its lower half is solid (tile $01: $1000's tiles 0 and 1); the background is row 3 of tile 0
/// everywhere, so only lines 8k + 3 can hit. Each NMI sets 8x8 sprites, then a delay loop
/// switches to 8x16 part way down the frame. In the frame where the switch falls between the
/// evaluations of lines Y + 14 and Y + 15, line Y + 15 alone finds sprite 0 in range (its last
/// row) and the line after it hits (the switch lands on line 97, so that is line 99 = 8 x 12 +
/// 3); the lines after that have no sprite. Skipping them right after line Y + 15 would keep
/// that line's sprite units and draw them on the first line after the skip instead, where the
/// background is transparent, and the frame would not hit (its only change: the hit flag). The NMI counts the frames with a hit at $11, which the test
/// checks is not zero (the ROM still makes sprite 0 hit), and the kernels' mutation that skips
/// after any whole line fails this test alone.
fn empty_lines_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,       // SEI CLD LDX #$FF TXS
        0xad, 0x02, 0x20, 0x10, 0xfb,       // $C005: LDA $2002 BPL $C005 (VBL, twice: the
        0xad, 0x02, 0x20, 0x10, 0xfb,       // $C00A: LDA $2002 BPL $C00A  PPU warms up)
        0xa9, 0xff, 0xa2, 0x00,             // LDA #$FF LDX #0
        0x9d, 0x00, 0x02, 0xe8, 0xd0, 0xfa, // $C013: STA $0200,X INX BNE $C013 (sprites off screen)
        0xa9, 0x01, 0x8d, 0x01, 0x02,       // LDA #1 STA $0201 (sprite 0: tile 1,
        0xa9, 0x00, 0x8d, 0x02, 0x02,       // LDA #0 STA $0202  attributes 0,
        0xa9, 0x80, 0x8d, 0x03, 0x02,       // LDA #$80 STA $0203  X 128)
        0x8d, 0x00, 0x20,                   // STA $2000 (NMI on)
        0x4c, 0x2b, 0xc0,                   // $C02B: JMP $C02B
        0x2c, 0x02, 0x20, 0x50, 0x02,       // $C02E NMI: BIT $2002 BVC +2
        0xe6, 0x11,                         // INC $11 (a sprite 0 hit this frame)
        0xe6, 0x10, 0xa5, 0x10,             // INC $10 LDA $10
        0x8d, 0x00, 0x02,                   // STA $0200 (sprite 0's Y := the frame count)
        0xa9, 0x02, 0x8d, 0x14, 0x40,       // LDA #2 STA $4014 (OAM DMA)
        0xa9, 0x80, 0x8d, 0x00, 0x20,       // LDA #$80 STA $2000 (8x8 sprites)
        0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E STA $2001 (rendering on)
        0xa9, 0x00, 0x8d, 0x05, 0x20,       // LDA #0 STA $2005
        0x8d, 0x05, 0x20,                   // STA $2005 (scroll 0, 0)
        0xa2, 0x0a, 0xa0, 0x00,             // LDX #10 $C055: LDY #0
        0x88, 0xd0, 0xfd,                   // $C057: DEY BNE $C057
        0xca, 0xd0, 0xf8,                   // DEX BNE $C055 (~12,900 cycles: near line 100)
        0xa9, 0xa0, 0x8d, 0x00, 0x20,       // LDA #$A0 STA $2000 (8x16 sprites)
        0x40,                               // RTI
    ];
    assert_eq!(code.len(), 0x63, "the branches above point into this layout");
    let mut rom = core_roms::nrom(code, 0xc02e, 0xc000);
    let chr = &mut rom[16 + 0x4000..];
    chr.fill(0);
    chr[0x0003] = 0xff; // background tile 0 (the whole nametable): row 3 solid
    chr[0x1010..0x1018].fill(0xff); // $1000's tile 1: the lower half of 8x16 sprite $01
    rom
}

/// The line on which each of the first `frames` NMIs of `empty_lines_rom` switches to 8x16
/// sprites: the PPU's line after the `STA $2000` at $C05F (Console::step catches the PPU up).
fn empty_lines_switch_lines(rom: &[u8], frames: usize) -> Vec<u16> {
    let mut c = Console::new(rom).unwrap();
    let mut lines = Vec::new();
    while lines.len() < frames {
        let pc = c.cpu.pc;
        c.step();
        if pc == 0xc05f {
            lines.push(c.to_flat().ppu_scanline);
        }
    }
    lines
}

#[test]
fn a_sprite_line_before_empty_lines_runs_identically() {
    let rom = empty_lines_rom();
    // The ROM's premises (`empty_lines_rom`): the switch lands on line 97 in every frame, so the
    // one line with sprite 0 in range is followed by a hit on line 99; and some frame hits.
    let lines = empty_lines_switch_lines(&rom, 300);
    assert!(
        lines.iter().all(|&l| l == 97),
        "the switch to 8x16 sprites moved off line 97 (lines {:?}): redo the ROM's reasoning",
        &lines[..8]
    );
    let mut c = Console::new(&rom).unwrap();
    c.run_frames(600);
    assert!(c.ram()[0x11] > 0, "no frame of the ROM hit sprite 0: it no longer tests the case");
    if let Err(e) = run_parity("empty lines", &rom, 600, 1, &random_buttons) {
        panic!("{e}");
    }
}

fn smb_input(_env: usize, step: usize, rng: &mut Rng) -> u8 {
    // Start on the title screen, then random SIMPLE_MOVEMENT presses (protocol B's inputs).
    if (10..12).contains(&step) {
        return 0x08;
    }
    SIMPLE_MOVEMENT[(rng.next() % 7) as usize]
}

#[test]
fn super_mario_bros_runs_identically_with_frameskip_4() {
    let rom = game_rom("super-mario-bros.nes").unwrap_or_else(|e| panic!("{e}"));
    let steps = frames().div_ceil(4).max(150);
    if let Err(e) = run_parity("super-mario-bros.nes", &rom, steps, 4, &smb_input) {
        panic!("{e}");
    }
}

/// `step_in_order` (the GPU's `Batch::set_order`): envs run in any order give the states of the
/// plain step, each env its own, and the same regrouping keys (`Batch::regroup`'s: the last
/// frame's instructions, then the PC it ended at) as in their own order; an order that is not a
/// permutation is refused.
#[test]
fn an_env_order_changes_which_slot_runs_an_env_not_the_result() {
    let rom = game_rom("super-mario-bros.nes").unwrap_or_else(|e| panic!("{e}"));
    let image = RomImage::new(&rom).unwrap();
    let n = 12;
    let identity: Vec<u32> = (0..n as u32).collect();
    let mut plain = vec![image.power_on(); n];
    let mut in_own_order = plain.clone();
    let mut ordered = plain.clone();
    let (mut ran_own, mut ran) = (vec![0u32; n], vec![0u32; n]);
    let mut rng = Rng(99);
    for step in 0..60 {
        let actions: Vec<u8> = (0..n).map(|e| smb_input(e, step, &mut rng)).collect();
        // A new shuffle every step (Fisher-Yates on the seeded generator).
        let mut order = identity.clone();
        for i in (1..n).rev() {
            order.swap(i, rng.next() as usize % (i + 1));
        }
        host::step(&mut plain, &image, &actions, 4, None).unwrap();
        host::step_in_order(&mut in_own_order, &image, &actions, &identity, 4, &mut ran_own).unwrap();
        host::step_in_order(&mut ordered, &image, &actions, &order, 4, &mut ran).unwrap();
        for e in 0..n {
            for (what, s) in [("own order", &in_own_order[e]), ("shuffled", &ordered[e])] {
                if let Some((field, at)) = first_difference(&plain[e], s) {
                    panic!("step {step}, env {e}, {what} (order {order:?}): first difference in {field}[{at}]");
                }
            }
        }
        assert_eq!(ran, ran_own, "step {step}: regrouping keys depend on the order");
        for e in 0..n {
            assert!(ran[e] >> 16 > 0, "step {step}, env {e}: no instructions counted");
            assert_eq!(ran[e] & 0xffff, plain[e].cpu_pc as u32, "step {step}, env {e}: the key's PC");
        }
    }
    // The envs did diverge (otherwise the order could not matter).
    assert!((1..n).any(|e| plain[e] != plain[0]));
    assert!(ran.iter().any(|&r| r != ran[0]));
    let actions = vec![0u8; n];
    for bad in [vec![0u32; n], (1..=n as u32).collect::<Vec<_>>(), (0..n as u32 - 1).collect()] {
        let err = host::step_in_order(&mut ordered, &image, &actions, &bad, 1, &mut ran).unwrap_err();
        assert!(err.to_string().contains("order"), "{err}");
    }
}

/// `step_masked` (the GPU's `Batch::step_masked`): the envs of the mask run their frames as
/// nes-core runs them, picture included, in a launch of their own slots; the others keep their
/// states and pictures byte for byte, whichever envs are chosen.
#[test]
fn a_masked_step_runs_the_chosen_envs_only() {
    let rom = game_rom("super-mario-bros.nes").unwrap_or_else(|e| panic!("{e}"));
    let image = RomImage::new(&rom).unwrap();
    let n = 9;
    let mut cores: Vec<Console> = (0..n).map(|_| Console::new(&rom).unwrap()).collect();
    let mut states: Vec<FlatState> = cores.iter().map(|c| c.to_flat()).collect();
    let mut pixels = vec![0u8; n * PIXELS_PER_ENV];
    let mut rng = Rng(7);
    let mut runs = vec![0usize; n];
    for step in 0..90 {
        let actions: Vec<u8> = (0..n).map(|e| smb_input(e, step, &mut rng)).collect();
        // A new mask every step: none, all, or each env with probability 1/2.
        let mask: Vec<bool> = match step % 10 {
            0 => vec![false; n],
            1 => vec![true; n],
            _ => (0..n).map(|_| rng.next() % 2 == 0).collect(),
        };
        let before = (states.clone(), pixels.clone());
        host::step_masked(&mut states, &image, &actions, &mask, 2, Some(&mut pixels)).unwrap();
        for e in 0..n {
            let picture = e * PIXELS_PER_ENV..(e + 1) * PIXELS_PER_ENV;
            if !mask[e] {
                assert!(states[e] == before.0[e], "step {step}, env {e}: a masked-out env changed");
                assert!(pixels[picture.clone()] == before.1[picture], "step {step}, env {e}: its picture changed");
                continue;
            }
            runs[e] += 1;
            let c = &mut cores[e];
            c.set_buttons(0, actions[e]);
            c.run_frames(2);
            if let Some((field, at)) = first_difference(&c.to_flat(), &states[e]) {
                panic!("step {step}, env {e} (mask {mask:?}): first difference in {field}[{at}]");
            }
            assert!(pixels[picture] == c.pixels()[..], "step {step}, env {e}: picture differs from nes-core's");
        }
    }
    // The envs ran different numbers of steps, so they hold different states.
    assert!(runs.iter().any(|&r| r != runs[0]), "{runs:?}");
    assert!((1..n).any(|e| states[e] != states[0]));
    let err = host::step_masked(&mut states, &image, &[0; 9], &[true; 8], 1, None).unwrap_err();
    assert!(err.to_string().contains("mask"), "{err}");
}

/// A state with bits no console holds (palette entries past 63, `v`'s bit 15 and the like), as a
/// Rust caller could hand to `Batch::load_state`: the batch uploads it as nes-core loads it
/// (`RomImage::loadable_state`), and the kernels then agree with nes-core, picture included.
/// As it was given, the kernels would draw palette entries of 192-255.
#[test]
fn a_state_with_bits_no_console_holds_runs_as_nes_core_loads_it() {
    let rom = prg_ram_rom();
    let image = RomImage::new(&rom).unwrap();
    let mut core = Console::new(&rom).unwrap();
    for _ in 0..3 {
        core.run_frame();
    }
    let mut odd = core.to_flat();
    odd.ppu_palette.iter_mut().for_each(|p| *p |= 0xc0);
    odd.ppu_v |= 0x8000;
    odd.ppu_t |= 0x8000;
    odd.ppu_x = 0xff;
    odd.ppu_at_latch = 0xff;
    odd.ppu_eval_n = 0xff;
    odd.ppu_eval_m = 0xff;
    let loaded = image.loadable_state(&odd).unwrap();
    let mut core = Console::from_flat(&odd, core.cart()).unwrap();
    let mut states = vec![loaded];
    let mut pixels = vec![0u8; PIXELS_PER_ENV];
    for frame in 0..3 {
        core.run_frame();
        host::step(&mut states, &image, &[0], 1, Some(&mut pixels[..])).unwrap();
        if let Some((field, i)) = first_difference(&core.to_flat(), &states[0]) {
            panic!("frame {frame}: first differing field `{field}`[{i}]");
        }
        assert!(pixels[..] == core.pixels()[..], "frame {frame}: the pictures differ");
    }
}

/// The frame loop's guard (nes-core's watchdog test, crates/nes-core/tests/watchdog.rs): a
/// console whose PPU is on a line that does not exist never reaches vertical blank, and both
/// sides halt it after the same number of steps with the same `Stalled` fault (2), then let time
/// pass in later frames. No ROM reaches this, so the parity runs above never do.
#[test]
fn a_console_that_never_reaches_vblank_stalls_identically() {
    let rom = prg_ram_rom();
    let image = RomImage::new(&rom).unwrap();
    let mut core = Console::new(&rom).unwrap();
    core.run_frame();
    core.bus.ppu.scanline = 400;
    let mut states = vec![core.to_flat()];
    for frame in 0..2 {
        core.run_frame();
        // SAFETY: a state of this ROM changed only in its PPU line: its banking maps and APU
        // indices are a loaded state's, and the PPU reads its line-indexed tables only on render
        // lines (`ppu_on_render_line`), which 400 is not. nes-core refuses to load the state, so
        // the checked `host::step` would too.
        unsafe { host::step_unvalidated(&mut states, &image, &[0], 1, None) }.unwrap();
        let want = core.to_flat();
        assert_eq!(want.cpu_fault, 2, "nes-core halts the console (frame {frame})");
        if let Some((field, i)) = first_difference(&want, &states[0]) {
            panic!("frame {frame}: first differing field `{field}`[{i}]");
        }
    }
}
