// The console (nes-core console.rs): `set_buttons(0, a)` then `run_frame()` x frames, per env.
#pragma once
#include "console_types.cuh"
#include "cpu.cuh"
#include "quiet.cuh"

// NES_MAX_STEPS_PER_FRAME (generated from nes-core console::MAX_STEPS_PER_FRAME): a frame is at
// most 29,781 CPU cycles, so fewer than 15,000 steps; a console that runs 4x that without
// reaching vertical blank is in an impossible state (corrupted memory) and is halted with fault 2,
// so one bad env cannot hang the launch.

// CPU cycles in a frame (341 x 262 PPU dots / 3, 29,780.67, rounded up): only sets where the
// parts of nes_run_frame end, so it need not be exact.
#define NES_FRAME_CYCLES 29781u

// The per-thread view of the state already in `n.st` (Bus::load: nothing owed, PPU and APU
// deadlines now, i.e. both recompute at the next cycle end; Apu::load: length writes may be
// pending).
NESLE_FN void nes_init(Nes& n, const u8* prg, const u32* code, const u8* chr) {
    FlatState* state = &n.st;
    n.prg = prg;
    n.code = code;
    n.chr = chr;
    n.pixels = nullptr;
    n.line_log = nullptr;
#ifdef NESLE_PPU_LOG
    n.log = nullptr;
#endif
    n.prg_ram = state->cart_prg_ram;
    u64 now = state->bus_cycles;
    n.ppu_done = 3 * now;
    n.ppu_deadline = now;
    n.apu_synced = now;
    n.apu_deadline = now;
    n.ppu_lazy = state->cart_kind != MAPPER_MMC3;
    n.apu_length_writes_pending = true;
    ppu_oam_caches_stale(n);  // Ppu::load
    n.settled = CPU_UNSETTLED;  // Cpu::load
    cart_prg_windows(n);
    cpu_update_attention(n);
    bus_update_deadlines(n);
    bus_refresh_lines(n);
}

// Console::step: one instruction (or interrupt sequence), then the PPU and APU caught up.
NESLE_DEV void nes_step(Nes& n) {
    bus_refresh_lines(n);
    cpu_unsettle(n);  // `cpu_p` may have been changed from outside
    cpu_step(n);
    bus_catch_up_ppu(n);
    bus_catch_up_apu(n);
}

// Console::skip_idle_loop: the CPU just ran an instruction that jumped to itself. If it is
// `JMP abs` in PRG ROM and the CPU is at rest, runs up to `max` more iterations of it in bulk,
// stopping before any cycle where the PPU or APU could change an interrupt line and not past
// cycle `until`, and returns how many. Every skipped iteration would read the same three
// bytes (no side effects in PRG ROM), sample the same lines and leave the CPU as it is, so only
// the clock moves.
// Inline into `nes_skip_loop` (nes-core: `#[inline]` into `skip_loop`).
NESLE_FN u32 nes_skip_idle_loop(Nes& n, u32 max, u64 until) {
    const FlatState& s = n.st;
    u16 pc = s.cpu_pc;
    if (pc < 0x8000 || pc > 0xfffd) return 0;
    u8 lo = (u8)pc, hi = (u8)(pc >> 8);
    if (bus_prg_read(n, pc) != 0x4c || bus_prg_read(n, pc + 1) != lo || bus_prg_read(n, pc + 2) != hi ||
        s.bus_open_bus != hi || !cpu_interrupts_at_rest(n))
        return 0;
    u32 k = bus_idle_jmp_iterations(n);
    if (k > max) k = max;
    // Not past the end of the frame's part (nes_run_frame), so the env waits there with the others.
    u64 now = s.bus_cycles;
    u64 left = until > now ? (until - now) / 3 : 0;
    if (k > left) k = (u32)left;
    bus_skip_idle_jmp(n, k);
    return k;
}

// Console::skip_status_poll: the CPU just ran a taken `BEQ`/`BNE` back to `LDA $2002` (any
// mirror); `AND #m`; `BEQ`/`BNE` (SMB waits for the sprite-0 hit so, ~30 lines a frame: nes-core
// perf-notes #35). If the iteration it just finished is a fixed point (a `$2002` read now would
// change nothing and return a value that gives the same A, N and Z and keeps looping; the data
// bus holds the branch's dummy read; the interrupt pipeline at rest), runs up to `max` steps of
// it in bulk: whole iterations, none past a cycle where the PPU or APU must catch up or a read
// that could see a status bit change. Returns the steps skipped (3 an iteration).
NESLE_FN u32 nes_skip_status_poll(Nes& n, u32 max) {
    const FlatState& s = n.st;
    u16 l = s.cpu_pc;
    // The loop in PRG ROM, its taken branch on the same page (3 cycles).
    if (l < 0x8000 || l > 0xfff8 || ((l ^ (l + 7)) & 0xff00) != 0) return 0;
    u8 branch = bus_prg_read(n, l + 5);
    if (bus_prg_read(n, l) != 0xad || (bus_prg_read(n, l + 1) & 7) != 2 || (bus_prg_read(n, l + 2) & 0xe0) != 0x20 ||
        bus_prg_read(n, l + 3) != 0x29 || (branch != 0xf0 && branch != 0xd0) || bus_prg_read(n, l + 6) != 0xf9)
        return 0;
    u8 v;
    if (!ppu_idle_status_read(s, v)) return 0;
    u8 r = v & bus_prg_read(n, l + 4);
    u8 zn = r == 0 ? FLAG_Z : (u8)(r & FLAG_N);
    if (s.cpu_a != r || (s.cpu_p & (FLAG_Z | FLAG_N)) != zn || (r == 0) != (branch == 0xf0) ||
        s.bus_open_bus != bus_prg_read(n, l + 7) || !cpu_interrupts_at_rest(n))
        return 0;
    u32 k = bus_status_poll_iterations(n);
    if (k > max / 3) k = max / 3;
    bus_skip_status_poll(n, k);
    return 3 * k;
}

// Console::skip_loop: the CPU just ran an instruction that jumped `back` bytes back: try the
// idle-loop (`back == 0`) or the status-poll (`back == 5`) fast-forward; returns the steps
// skipped. Out of line, as in nes-core (`#[inline(never)]`): it runs a few times a frame.
NESLE_DEV u32 nes_skip_loop(Nes& n, u16 back, u32 max, u64 until) {
    if (back == 0) return nes_skip_idle_loop(n, max, until);
    if (back == 5) return nes_skip_status_poll(n, max);
    return 0;
}

// The rest of an iteration of nes_run_frame's loop after its instruction (at `pc`): the
// idle-loop fast-forward (not past `until`, the end of the frame's part) and the step bound.
// Returns true when the frame must end early (the console faulted).
NESLE_FN bool nes_frame_after_step(Nes& n, u32& steps, u16 pc, u64 until) {
    FlatState& s = n.st;
    steps += 1;
    // 0: a `JMP` to itself; 5: a `BEQ`/`BNE` back to a `LDA $2002; AND #m` (one test for
    // both: 1 and 4 fall through in `nes_skip_loop`).
    u16 back = (u16)(pc - s.cpu_pc);
    if ((back & ~5) == 0 && !s.ppu_frame_complete)
        steps += nes_skip_loop(n, back, steps < NES_MAX_STEPS_PER_FRAME ? NES_MAX_STEPS_PER_FRAME - steps : 0, until);
    if (steps > NES_MAX_STEPS_PER_FRAME) {
        nes_halt(n, 2, 0, s.cpu_pc);
        return true;
    }
    return false;
}

// One iteration of nes_run_frame's loop, the CPU's registers, clock and data bus in `r` (the
// state's copies stale meanwhile): the instruction at `r.cpu_pc` on the quiet path when it is
// quiet (`quiet_until`: nes_quiet_until, kept with `r`), else the full step with `r` written
// back first and read again after; then the idle-loop fast-forward and the step bound, which
// read the state, so a quiet instruction that could need either writes `r` back too. Returns
// true when the frame ends (vertical blank reached, or the console faulted).
NESLE_FN bool nes_frame_turn(Nes& n, CpuRegs& r, u64& quiet_until, u32& steps, u64 until) {
    u32 pc = r.cpu_pc;
    bool quiet = cpu_quiet_step(n, r, quiet_until);
    if (quiet && ((pc - r.cpu_pc) & 0xfffa) != 0 && steps < NES_MAX_STEPS_PER_FRAME) {
        steps += 1;
        return false;
    }
    cpu_regs_store(n, r);
    if (!quiet) cpu_step_at(n, pc);
    bool end = nes_frame_after_step(n, steps, pc, until) || n.st.ppu_frame_complete;
    r = cpu_regs_load(n);
    quiet_until = nes_quiet_until(n);
    return end;
}

// Where part `part` (1-based) of a frame that started at cycle `start` ends: NESLE_PHASES
// stretches of equal CPU time, the last one open.
NESLE_FN u64 nes_part_end(u64 start, u32 part) {
    return part < NESLE_PHASES ? start + (u64)part * (NES_FRAME_CYCLES / NESLE_PHASES) : ~0ull;
}

#if NESLE_WARP_VOTE && NESLE_PHASES > 1 && NESLE_SLACK
// The parts' barriers with a slack of one part (kernel-notes #187): two mbarriers taking turns,
// each counting the warps done with every other part. The launch's parts are numbered from 1
// over its frames and slots (part 0: the launch's start, which every warp passes in
// nes_parts_init), and part h's barrier is `nes_part_bars[h & 1]` in its phase h / 2. At the
// end of part h a warp arrives there, then waits until every warp is done with part h - 1: the
// warps of a block stay within two neighbouring parts of the frame (sharing the instruction
// cache, as the barrier is there for, #40), and the fast warps of a part start the next one
// while its slowest finish. The phase a warp waits for cannot have been overtaken: that
// barrier's next phase is part h + 1, which completes only after this warp arrives for it.
// Every frame runs NESLE_PHASES parts, a multiple of 4, so a part's number within its frame
// tells its barrier and its phase's parity.
static_assert(NESLE_PHASES % 4 == 0, "NESLE_SLACK 1 needs NESLE_PHASES a multiple of 4");
__shared__ u64 nes_part_bars[2];

NESLE_FN u32 nes_part_bar(u32 h) { return (u32)__cvta_generic_to_shared(&nes_part_bars[h & 1]); }

NESLE_FN void nes_part_arrive(u32 h) {
    __syncwarp();
    if ((threadIdx.x & 31) == 0)
        asm volatile("{ .reg .b64 state; mbarrier.arrive.shared.b64 state, [%0]; }" ::"r"(nes_part_bar(h)) : "memory");
}

// Before the launch's first part, by every thread of the block: one arrival a warp for each
// part, and part 0 done.
NESLE_FN void nes_parts_init() {
    if (threadIdx.x == 0)
        for (u32 b = 0; b < 2; b++) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(nes_part_bar(b)), "r"(blockDim.x / 32) : "memory");
    __syncthreads();
    nes_part_arrive(0);
}

// The barrier at the end of part `part` (1-based) of a frame.
NESLE_FN void nes_part_barrier(u32 part) {
    nes_part_arrive(part);
    u32 at = nes_part_bar(part - 1), parity = ((part - 1) >> 1) & 1, done;
    for (;;) {
#if __CUDA_ARCH__ >= 900
        // May suspend the thread until the phase completes (or a time limit): no busy polling.
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(at), "r"(parity) : "memory");
#else
        asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(at), "r"(parity) : "memory");
#endif
        if (done) break;
#if __CUDA_ARCH__ < 900
        __nanosleep(64);
#endif
    }
}
#else
NESLE_FN void nes_parts_init() {}
// A barrier after each part in the vote's builds; none in the host's (one thread at a time).
NESLE_FN void nes_part_barrier(u32) {
#if NESLE_WARP_VOTE && NESLE_PHASES > 1
    __syncthreads();
#endif
}
#endif

// At the end of a part: the owed PPU dots up to the start of the line the PPU would reach (a
// catch-up an observer could have asked for, so nothing changes but when the dots run). Left
// lazy, most of a frame's dots would run at the vblank deadline, which the envs of a warp reach
// in different rounds of the vote, one env at a time (kernel-notes #84); at a part's end they
// run together. Up to a line start, so the next catch-up begins with whole lines.
NESLE_DEV void nes_part_catch_up(Nes& n) {
    u32 at = n.st.ppu_dot + bus_ppu_owed(n);
    if (at >= PPU_DOTS_PER_LINE) bus_run_ppu(n, at % PPU_DOTS_PER_LINE);
}

// nes_run_frame's loop for one thread on its own: no votes, no barriers (the host build, and
// the redraw kernel, where only some threads run a frame); the same parts, idle-loop bound and
// catch-ups as the vote's loop.
NESLE_FN u32 nes_frame_loop_alone(Nes& n, u32& steps) {
    FlatState& s = n.st;
    u32 ran = 0;
    u64 start = s.bus_cycles;
    CpuRegs r = cpu_regs_load(n);
    u64 quiet_until = nes_quiet_until(n);
    for (u32 part = 1; part <= NESLE_PHASES; part++) {
        u64 end = nes_part_end(start, part);
        while (!s.ppu_frame_complete && r.bus_cycles < end) {
            ran += 1;
            if (nes_frame_turn(n, r, quiet_until, steps, end)) return ran;
        }
        cpu_regs_store(n, r);
        if (s.ppu_frame_complete) break;
        nes_part_catch_up(n);
        quiet_until = nes_quiet_until(n);
    }
    return ran;
}

// nes_run_frame for one thread on its own (kernels/lines.cuh's redraw).
NESLE_DEV void nes_run_frame_alone(Nes& n) {
    FlatState& s = n.st;
    s.ppu_frame_complete = 0;
    bus_refresh_lines(n);
    cpu_unsettle(n);
    u32 steps = 0;
    nes_frame_loop_alone(n, steps);
    bus_catch_up_ppu(n);
    bus_catch_up_apu(n);
    s.ppu_frame_complete = 0;
}

// Runs until the PPU enters vertical blank (line 241, dot 1): one whole frame. The PPU and APU
// are caught up on every exit (Console::run_frame), so the state is exact between frames.
// Games wait for the NMI in a `JMP` to itself (SMB: a third of its cycles in play): once an
// iteration of it leaves the CPU at rest, the following ones up to the next cycle where an
// interrupt line may change are skipped in bulk, each counted as a step (nes-core perf #21).
// SMB's sprite-0 wait (`LDA $2002; AND #$40; BEQ`) is skipped the same way, up to the first
// read that could see a status bit change (#35). Returns the instructions it ran (the loop's
// rounds, skipped iterations not counted): a measure of the frame's work for regrouping (#21).
// A thread without an env (`active` false: past the last env in the launch's last block) only
// takes part in the warp's votes and the block's barriers.
NESLE_DEV u32 nes_run_frame(Nes& n, bool active) {
    FlatState& s = n.st;
    if (active) {
        s.ppu_frame_complete = 0;
        bus_refresh_lines(n);
        cpu_unsettle(n);
    }
    u32 steps = 0, ran = 0;
#if NESLE_WARP_VOTE
    u64 start = active ? s.bus_cycles : 0;
    // The PC vote: the threads of a warp run the same game on different inputs, so they drift
    // apart inside a frame and the warp then runs their instruction streams one after another.
    // Each round only the threads at the lowest 6502 PC run an instruction; the others wait, so
    // a thread that fell behind (took a longer branch, a loop more) catches up and the warp runs
    // the shared code after the join once. Which thread waits changes no env's own sequence of
    // steps, so the results are the same bit for bit; every thread of `mask` takes the same
    // number of rounds, as the `_sync` calls need. NESLE_PC_VOTE=2 ranks by stack depth first
    // (the deepest subroutine returns first), then PC (crates/nes-core/examples/warp_model.rs
    // models both). A finished thread votes the key no running thread can have, so one
    // reduction a round both picks the threads and ends the loop.
    //
    // The frame runs in NESLE_PHASES parts of equal CPU time with a block barrier after each
    // (kernel-notes #40): the warps of a block then run the same part of the frame at the same
    // time and share the instruction cache, which the warps of protocol B otherwise overflow,
    // each in its own part of the frame. Where a part ends changes no env's steps either.
    // Every thread of the warp: the step launch's blocks are a multiple of 32 threads (launch.rs
    // `step_block`) and each thread runs every frame, with or without an env. A constant, not
    // `__activemask()`, whose value the loop spilled and reloaded before every vote (#127).
    const u32 mask = 0xffffffffu;
    bool done = !active;
    // The registers of the quiet path (nes_frame_turn); a thread without an env holds its own
    // unused local copy's, and votes the key of no thread.
    CpuRegs r = cpu_regs_load(n);
    u64 quiet_until = active ? nes_quiet_until(n) : 0;
    // One loop for the frame's rounds and its parts' ends, so the frame has one vote: the
    // compiler puts a `WARPSYNC` before it (some paths to it are divergent), and that gathers a
    // warp wherever it comes from. With a loop per part, a part's first vote came straight from
    // the previous part's barrier, with no `WARPSYNC`, and ran on whatever part of a split warp
    // reached it (kernel-notes "The pair hangs", "Fix H hangs too").
    u32 part = 1;
    u64 end = nes_part_end(start, part);
    for (;;) {
        bool wait = done || r.bus_cycles >= end;
        u32 key = wait ? 0xffffffffu : NESLE_PC_VOTE == 2 ? (u32)r.cpu_s << 16 | r.cpu_pc : r.cpu_pc;
        u32 low = __reduce_min_sync(mask, key);
        if (low == 0xffffffffu) {  // the part's end, for the whole warp
            cpu_regs_store(n, r);
            // The warp leaves the part together: its running envs' PPUs catch up in one pass.
            if (!done && part < NESLE_PHASES) {
                nes_part_catch_up(n);
                quiet_until = nes_quiet_until(n);
            }
            nes_part_barrier(part);
            if (part == NESLE_PHASES) break;
            part += 1;
            end = nes_part_end(start, part);
            continue;
        }
        if (key != low) continue;
        ran += 1;
        done = nes_frame_turn(n, r, quiet_until, steps, end);
    }
#else
    if (active) ran = nes_frame_loop_alone(n, steps);
#endif
    if (active) {
        bus_catch_up_ppu(n);
        bus_catch_up_apu(n);
        s.ppu_frame_complete = 0;
    }
    return ran;
}

// One env's share of nesle_step, on the state in `n.st` and its PRG RAM at `prg_ram` (none when
// `active` is false: see nes_run_frame). `pixels` (nullable) receives the last frame: run_frame
// starts and ends in vertical blank, so the last call draws every visible dot exactly once.
// `lines` (nullable) receives the last frame's record for drawing it afterwards (kernels/lines.cuh).
// Returns the instructions of the last frame.
NESLE_DEV u32 nes_step_env(Nes& n, const u8* prg, const u32* code, const u8* chr, u8* prg_ram, u8 action, u32 frames, u8* pixels,
                           LineLog* lines, bool active) {
    if (active) {
        nes_init(n, prg, code, chr);
        n.prg_ram = prg_ram;
        n.st.pad_buttons[0] = action;
    }
    u32 ran = 0;
    for (u32 f = 0; f < frames; f++) {
        if (f + 1 == frames) {
            n.pixels = pixels;
            n.line_log = lines;
        }
        ran = nes_run_frame(n, active);
    }
    return ran;
}

// --- the launch-local mirror (docs/kernel-notes.md, "Local mirror") and the packed states ---
//
// nesle_step runs each env on a copy of its FlatState in thread-local memory (`Nes::st`). CUDA
// lays local memory out interleaved (word i of thread t sits next to word i of thread t+1), so
// when a warp's threads touch the same field, as they do on every access in lockstep, the warp
// makes one 128-byte transaction instead of 32.
// In global memory a batch keeps each state packed (crates/nes-cuda/src/packed.rs): without the
// regions its cartridge can never touch (`packing` bit 0: the upper 2 KiB of CIRAM, kept only
// with four-screen mirroring; bit 1: PRG RAM; bit 2: CHR RAM), so Super Mario Bros. takes
// 12,896 bytes an env instead of 23,136. The local copy's dropped regions are never read, nor is
// its PRG RAM: that stays in the packed state (#44).
#define NES_OFF_CIRAM_HI (__builtin_offsetof(FlatState, cart_ciram) + 0x800)
#define NES_OFF_PRG_RAM __builtin_offsetof(FlatState, cart_prg_ram)
#define NES_OFF_CHR_RAM __builtin_offsetof(FlatState, cart_chr_ram)
#define NES_OFF_TAIL __builtin_offsetof(FlatState, cart_prg_len)
static_assert(NES_OFF_CIRAM_HI % 8 == 0 && NES_OFF_PRG_RAM % 8 == 0 && NES_OFF_CHR_RAM % 8 == 0 &&
                  NES_OFF_TAIL % 8 == 0 && NES_OFF_PRG_RAM == NES_OFF_CIRAM_HI + 0x800 &&
                  NES_OFF_CHR_RAM == NES_OFF_PRG_RAM + 8192 && NES_OFF_TAIL == NES_OFF_CHR_RAM + 8192,
              "packed regions");

#define NES_PACK_CIRAM_HI 1u
#define NES_PACK_PRG_RAM 2u
#define NES_PACK_CHR_RAM 4u

// Copies bytes [from, to) of the state between `full` and `packed + at` (`to_packed`: full ->
// packed); returns the packed offset after them.
NESLE_FN u32 nes_copy_region(u8* full, u8* packed, u32 at, u32 from, u32 to, bool to_packed) {
    u64* f = (u64*)(full + from);
    u64* p = (u64*)(packed + at);
    u32 words = (to - from) / 8;
    if (to_packed)
        for (u32 i = 0; i < words; i++) p[i] = f[i];
    else
        for (u32 i = 0; i < words; i++) f[i] = p[i];
    return at + (to - from);
}

// Packs `full` into `packed` or unpacks it, region by region in layout order (packed.rs), all
// but PRG RAM, which the step kernel uses where it is (`Nes::prg_ram`, kernel-notes #44: Super
// Mario Bros.' copies shrink from 12,896 to 4,704 bytes each way). Returns PRG RAM's place in
// `packed`, or null when the state keeps none.
NESLE_FN u8* nes_convert(FlatState* full, u8* packed, u32 packing, bool to_packed) {
    u8* f = (u8*)full;
    u32 at = nes_copy_region(f, packed, 0, 0, NES_OFF_CIRAM_HI, to_packed);
    if (packing & NES_PACK_CIRAM_HI) at = nes_copy_region(f, packed, at, NES_OFF_CIRAM_HI, NES_OFF_PRG_RAM, to_packed);
    u8* prg_ram = nullptr;
    if (packing & NES_PACK_PRG_RAM) {
        prg_ram = packed + at;
        at += NES_OFF_CHR_RAM - NES_OFF_PRG_RAM;
    }
    if (packing & NES_PACK_CHR_RAM) at = nes_copy_region(f, packed, at, NES_OFF_CHR_RAM, NES_OFF_TAIL, to_packed);
    nes_copy_region(f, packed, at, NES_OFF_TAIL, sizeof(FlatState), to_packed);
    return prg_ram;
}

// Puts `env` in the next slot of `queue` (nesle_step's, after nes_step_slot): [0] the slots
// taken, [1] the slots nesle_draw_lines has claimed, [2] the slots its warps found still empty
// (so drew beside the step), [3 + s] env + 1 once slot s holds an env whose frame is stored.
// The env's state and log are made visible before its slot (kernel-notes #166).
NESLE_DEV void nes_publish(u32* queue, u32 env) {
#if defined(__CUDA_ARCH__)
    __threadfence();
    // One count taken for the warp's threads here.
    u32 m = __activemask(), lane = threadIdx.x & 31, leader = __ffs(m) - 1, base = 0;
    if (lane == leader) base = atomicAdd(&queue[0], __popc(m));
    base = __shfl_sync(m, base, leader) + __popc(m & ((1u << lane) - 1));
    atomicExch(&queue[3 + base], env + 1);
#else
    queue[3 + queue[0]++] = env + 1;
#endif
}

// Thread slot `t`'s share of nesle_step: env `order[t]` when the batch runs in an order of its
// own (a permutation of the envs, e.g. grouped by game phase so a warp's envs run the same code:
// docs/kernel-notes.md #21), else env `t`, on a local copy of its packed state (PRG RAM used in
// place), packed back at the end. Which thread runs an env changes nothing in it. A slot past the
// last env (`t >= n_envs`, in the launch's last block) has no env: it only meets the votes and
// barriers.
// `ran` (nullable) receives each env's instructions in its last frame, the key to regroup by.
// `lines` (nullable, one LineLog an env) receives the last frame's record for kernels/lines.cuh.
// Out of line: inlined into nesle_step, it left the frame loop 144 bytes of spill loads, not 4.
NESLE_DEV void nes_step_slot(u8* states, u32 stride, u32 packing, const u8* prg, const u32* code, const u8* chr, const u8* actions,
                             const u32* order, u32 t, u32 n_envs, u32 frames, u8* pixels, u32* ran,
                             LineLog* lines) {
    bool active = t < n_envs;
    u32 env = active ? (order ? order[t] : t) : 0;
    u8* packed = states + (u64)env * stride;
    u8* px = active && pixels ? pixels + (u64)env * 256 * 240 : nullptr;
    Nes n;
    u8* prg_ram = active ? nes_convert(&n.st, packed, packing, false) : nullptr;
    LineLog* lg = active && lines ? lines + env : nullptr;
    if (lg) lg->flags = 0;
    u32 r = nes_step_env(n, prg, code, chr, prg_ram, active ? actions[env] : 0, frames, px, lg, active);
    if (active) nes_convert(&n.st, packed, packing, true);
    // The regrouping key (kernel-notes #179): the last frame's instructions in the high half,
    // the PC it ended at in the low half. The sort orders by the whole word (by the count, its
    // ties rare), then each block's envs by the PC (order.cuh, nesle_order_out).
    if (active && ran) ran[env] = (r < 0xffffu ? r : 0xffffu) << 16 | n.st.cpu_pc;
}

// RAM byte `addr` of env `env` becomes values[env] (its low byte), or `value` when `values` is
// null, if mask[env] != 0 (nesle_write_ram; on the host, nesle_host_write_ram). RAM sits in every
// packing's head, at its FlatState offset, and no other part of a state caches it.
NESLE_FN void nes_write_ram(u8* states, u32 stride, const u8* mask, const u32* values, u32 value, u32 addr, u32 env) {
    if (!mask[env]) return;
    states[(u64)env * stride + __builtin_offsetof(FlatState, ram) + addr] = (u8)(values ? values[env] : value);
}

// Copies one packed state (`stride` bytes, a multiple of 8) 8 bytes at a time.
NESLE_FN void nes_copy_packed(u8* dst, const u8* src, u32 stride) {
    u64* d = (u64*)dst;
    const u64* s = (const u64*)src;
    for (u32 i = 0; i < stride / 8; i++) d[i] = s[i];
}
