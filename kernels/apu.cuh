// The APU as far as the CPU can observe it (nes-core apu.rs + apu/*.rs): frame counter,
// length counters, DMC memory reader / timer / output unit, IRQ flags. No sound.
//
// The bus runs it lazily, as in nes-core (perf-notes #20): `apu_tick` stands for one CPU cycle
// before that cycle's access, and the bus calls `apu_run(n)` (n ticks at once, in closed form
// between frame-counter steps) before $4015 reads and $4000-$4017 writes, at the cycle
// `apu_cycles_to_event` predicts (the IRQ line may rise or the DMC may want a DMA), and at the
// end of every frame; the result is exactly that of one tick per cycle.
#pragma once
#include "console_types.cuh"

#define APU_QUARTER 1
#define APU_HALF 2
#define APU_WRITE_DELAY_ODD 3
#define APU_WRITE_DELAY_EVEN 4

// Tables in __constant__ memory: one copy per GPU, broadcast when a warp reads one entry.
__constant__ u16 APU_STEP_CYCLES[2][6] = {{7457, 14913, 22371, 29828, 29829, 29830},
                                          {7457, 14913, 22371, 29829, 37281, 37282}};
__constant__ u8 APU_STEP_EVENTS[2][6] = {
    {APU_QUARTER, APU_QUARTER | APU_HALF, APU_QUARTER, 0, APU_QUARTER | APU_HALF, 0},
    {APU_QUARTER, APU_QUARTER | APU_HALF, APU_QUARTER, 0, APU_QUARTER | APU_HALF, 0}};
__constant__ u8 APU_LENGTH_TABLE[32] = {10, 254, 20, 2,  40, 4,  80, 6,  160, 8,  60, 10, 14, 12, 26, 14,
                                        12, 16,  24, 18, 48, 20, 96, 22, 192, 24, 72, 26, 16, 28, 32, 30};
__constant__ u16 DMC_RATE_TABLE[16] = {428, 380, 340, 320, 286, 254, 226, 214,
                                       190, 160, 142, 128, 106, 84,  72,  54};

// --- frame_counter.rs ---

NESLE_FN void frame_write(FlatState& s, u8 v, bool odd_cycle) {
    s.apu_frame_pending = v;
    s.apu_frame_last_write = v;
    s.apu_frame_write_delay = odd_cycle ? APU_WRITE_DELAY_ODD : APU_WRITE_DELAY_EVEN;
    s.apu_frame_irq_inhibit = (v & 0x40) != 0;
    if (s.apu_frame_irq_inhibit) s.apu_frame_irq_flag = 0;
}

NESLE_FN u8 frame_tick(FlatState& s) {
    u32 mode = s.apu_frame_five_step;
    u32 step = s.apu_frame_step;
    u8 events = 0;
    s.apu_frame_cycle += 1;
    if (s.apu_frame_cycle == APU_STEP_CYCLES[mode][step]) {
        if (mode == 0 && step >= 3 && !s.apu_frame_irq_inhibit) s.apu_frame_irq_flag = 1;
        u8 e = APU_STEP_EVENTS[mode][step];
        if (e != 0 && s.apu_frame_block == 0) {
            events |= e;
            s.apu_frame_block = 2;
        }
        if (step == 5) {
            s.apu_frame_step = 0;
            s.apu_frame_cycle = 0;
        } else {
            s.apu_frame_step += 1;
        }
    }
    if (s.apu_frame_write_delay > 0) {
        s.apu_frame_write_delay -= 1;
        if (s.apu_frame_write_delay == 0) {
            s.apu_frame_five_step = (s.apu_frame_pending & 0x80) != 0;
            s.apu_frame_step = 0;
            s.apu_frame_cycle = 0;
            if (s.apu_frame_five_step && s.apu_frame_block == 0) {
                events |= APU_QUARTER | APU_HALF;
                s.apu_frame_block = 2;
            }
        }
    }
    if (s.apu_frame_block > 0) s.apu_frame_block -= 1;
    return events;
}

// FrameCounter::quiet_cycles_to_step: ticks until the next step fires (at least 1), or 0 (nes-core's
// None) when a $4017 write or the clock blocker is pending (those cycles tick one by one) or the
// state is off the schedule.
NESLE_FN u32 frame_quiet_cycles_to_step(const FlatState& s) {
    u32 next = APU_STEP_CYCLES[s.apu_frame_five_step][s.apu_frame_step];
    if ((s.apu_frame_write_delay | s.apu_frame_block) != 0 || s.apu_frame_cycle >= next) return 0;
    return next - s.apu_frame_cycle;
}

// FrameCounter::cycles_to_irq: ticks until `frame_tick` may next set the IRQ flag (at least 1),
// 0xffffffff if never without a $4017 write. A pending write counts as an event.
NESLE_FN u32 frame_cycles_to_irq(const FlatState& s) {
    u32 k = 0xffffffffu;
    if (!s.apu_frame_five_step && !s.apu_frame_irq_inhibit) {
        // Steps 3, 4 and 5 of the 4-step mode set the flag.
        u32 next = APU_STEP_CYCLES[0][s.apu_frame_step < 3 ? 3 : s.apu_frame_step];
        k = s.apu_frame_cycle < next ? next - s.apu_frame_cycle : 1;
    }
    if (s.apu_frame_write_delay > 0 && s.apu_frame_write_delay < k) k = s.apu_frame_write_delay;
    return k;
}

// --- length_counter.rs ---

NESLE_FN void len_load(FlatState& s, int i, u8 index) {
    if (s.apu_len_enabled[i]) {
        s.apu_len_reload[i] = APU_LENGTH_TABLE[index & 0x1f];
        s.apu_len_reload_seen[i] = s.apu_len_counter[i];
    }
}

NESLE_FN void len_set_enabled(FlatState& s, int i, bool enabled) {
    s.apu_len_enabled[i] = enabled;
    if (!enabled) {
        s.apu_len_counter[i] = 0;
        s.apu_len_reload[i] = 0;
    }
}

NESLE_FN void len_clock(FlatState& s, int i) {
    if (s.apu_len_counter[i] > 0 && !s.apu_len_halt[i]) s.apu_len_counter[i] -= 1;
}

NESLE_FN void len_apply_writes(FlatState& s, int i) {
    if (s.apu_len_reload[i] != 0) {
        if (s.apu_len_counter[i] == s.apu_len_reload_seen[i]) s.apu_len_counter[i] = s.apu_len_reload[i];
        s.apu_len_reload[i] = 0;
    }
    s.apu_len_halt[i] = s.apu_len_new_halt[i];
}

// --- dmc.rs ---

NESLE_FN void dmc_write(FlatState& s, u16 reg, u8 v) {
    switch (reg & 3) {
        case 0:
            s.dmc_irq_enable = (v & 0x80) != 0;
            s.dmc_loop_flag = (v & 0x40) != 0;
            s.dmc_rate = v & 0x0f;
            if (!s.dmc_irq_enable) s.dmc_irq_flag = 0;
            break;
        case 1: s.dmc_output_level = v & 0x7f; break;
        case 2: s.dmc_sample_addr = (u16)(0xc000 | ((u16)v << 6)); break;
        default: s.dmc_sample_len = (u16)(((u16)v << 4) | 1); break;
    }
}

NESLE_FN void dmc_restart(FlatState& s) {
    s.dmc_addr = s.dmc_sample_addr;
    s.dmc_bytes_remaining = s.dmc_sample_len;
}

NESLE_FN void dmc_set_enabled(FlatState& s, bool enabled, bool odd_cycle) {
    if (!enabled) {
        s.dmc_bytes_remaining = 0;
    } else if (s.dmc_bytes_remaining == 0) {
        dmc_restart(s);
        s.dmc_start_delay = odd_cycle ? 3 : 2;
    }
}

// Dmc::clock_output: the output unit plays one bit (the level moves by 2 within 0..127).
NESLE_FN void dmc_clock_output(FlatState& s) {
    if (!s.dmc_silence) {
        if (s.dmc_shift & 1) {
            if (s.dmc_output_level <= 125) s.dmc_output_level += 2;
        } else if (s.dmc_output_level >= 2) {
            s.dmc_output_level -= 2;
        }
    }
    s.dmc_shift >>= 1;
    s.dmc_bits_remaining -= 1;
    if (s.dmc_bits_remaining == 0) {
        s.dmc_bits_remaining = 8;
        if (s.dmc_buffer_empty) {
            s.dmc_silence = 1;
        } else {
            s.dmc_silence = 0;
            s.dmc_shift = s.dmc_buffer;
            s.dmc_buffer_empty = 1;
        }
    }
}

NESLE_FN void dmc_tick(FlatState& s) {
    if (s.dmc_start_delay > 0) s.dmc_start_delay -= 1;
    if (s.dmc_timer > 0) {
        s.dmc_timer -= 1;
        return;
    }
    s.dmc_timer = DMC_RATE_TABLE[s.dmc_rate] - 1;
    dmc_clock_output(s);
}

// Dmc::run: `count` calls of dmc_tick at once: the timer in closed form, then one output clock
// per period, and once it is silent with an empty buffer (the usual idle state) the rest of
// its 8-bit cycles in closed form.
NESLE_FN void dmc_run(FlatState& s, u32 count) {
    u32 dec = count < 255 ? count : 255;
    s.dmc_start_delay = s.dmc_start_delay > dec ? (u8)(s.dmc_start_delay - dec) : 0;
    if (count <= s.dmc_timer) {
        s.dmc_timer -= (u16)count;
        return;
    }
    // The first output clock comes on tick `timer + 1`, then one every `period` ticks.
    u32 period = DMC_RATE_TABLE[s.dmc_rate];
    u32 rest = count - ((u32)s.dmc_timer + 1);
    s.dmc_timer = (u16)(period - 1 - rest % period);
    u32 clocks = 1 + rest / period;
    while (clocks > 0) {
        if (s.dmc_silence && s.dmc_buffer_empty) {
            // Nothing can refill the buffer here (only DMA does): the level stays, the shift
            // register empties, the bit counter wraps every 8 clocks.
            u32 b = (u32)s.dmc_bits_remaining - 1;
            s.dmc_bits_remaining = (u8)((b + 8 - clocks % 8) % 8 + 1);
            s.dmc_shift = clocks >= 8 ? 0 : (u8)(s.dmc_shift >> clocks);
            return;
        }
        dmc_clock_output(s);
        clocks -= 1;
    }
}

// Dmc::cycles_to_dma: ticks until the memory reader may want a byte (0: now), 0xffffffff if no
// byte remains to fetch (only a register write can change that).
NESLE_FN u32 dmc_cycles_to_dma(const FlatState& s) {
    if (s.dmc_bytes_remaining == 0) return 0xffffffffu;
    if (s.dmc_buffer_empty) return s.dmc_start_delay;
    // The output unit takes the buffered byte when its bit counter runs out.
    u32 period = DMC_RATE_TABLE[s.dmc_rate];
    u32 empty = (u32)s.dmc_timer + 1 + ((u32)s.dmc_bits_remaining - 1) * period;
    return empty > s.dmc_start_delay ? empty : s.dmc_start_delay;
}

// Whether the DMC memory reader wants a byte now (its address is `dmc_addr`).
NESLE_FN bool dmc_dma_wanted(const FlatState& s) {
    return s.dmc_buffer_empty && s.dmc_bytes_remaining > 0 && s.dmc_start_delay == 0;
}

NESLE_FN void dmc_dma_complete(FlatState& s, u8 v) {
    if (s.dmc_bytes_remaining == 0) return;
    s.dmc_buffer = v;
    s.dmc_buffer_empty = 0;
    s.dmc_addr = s.dmc_addr == 0xffff ? 0x8000 : (u16)(s.dmc_addr + 1);
    s.dmc_bytes_remaining -= 1;
    if (s.dmc_bytes_remaining == 0) {
        if (s.dmc_loop_flag) {
            dmc_restart(s);
        } else if (s.dmc_irq_enable) {
            s.dmc_irq_flag = 1;
        }
    }
}

// --- apu.rs ---

// Apu::tick: one CPU cycle. Length-counter writes land after this cycle's clock; applying them
// is idempotent, so only the first tick after a write needs to (`n.apu_length_writes_pending`).
NESLE_FN void apu_tick(Nes& n) {
    FlatState& s = n.st;
    s.apu_odd_cycle = !s.apu_odd_cycle;
    u8 events = frame_tick(s);
    if (events & APU_HALF) {
        for (int i = 0; i < 4; i++) len_clock(s, i);
    }
    if (n.apu_length_writes_pending) {
        n.apu_length_writes_pending = false;
        for (int i = 0; i < 4; i++) len_apply_writes(s, i);
    }
    dmc_tick(s);
}

// Apu::run: `count` calls of apu_tick at once (the bus runs the APU lazily). Cycles without a
// frame-counter step, a pending $4017 write or a length-counter write move the counters in
// closed form; those few others tick one by one.
NESLE_FN void apu_run(Nes& n, u32 count) {
    FlatState& s = n.st;
    while (count > 0) {
        u32 k = frame_quiet_cycles_to_step(s);
        u32 quiet = (k > 0 && !n.apu_length_writes_pending) ? k - 1 : 0;
        if (quiet > count) quiet = count;
        if (quiet > 0) {
            s.apu_frame_cycle += (u16)quiet;
            dmc_run(s, quiet);
            s.apu_odd_cycle ^= (u8)(quiet & 1);
            count -= quiet;
        }
        if (count > 0) {
            apu_tick(n);
            count -= 1;
        }
    }
}

// Apu::cycles_to_event: the ticks after which the CPU could see a change it did not cause: the
// IRQ line rising (frame interrupt; the DMC's comes only with a DMA the bus performs) or the DMC
// asking for a DMA. 0 when the DMC asks now. The bus must catch the APU up by then.
NESLE_FN u32 apu_cycles_to_event(const FlatState& s) {
    u32 a = frame_cycles_to_irq(s);
    u32 b = dmc_cycles_to_dma(s);
    return a < b ? a : b;
}

NESLE_FN u8 apu_read_status(FlatState& s) {
    u8 v = 0;
    for (int i = 0; i < 4; i++) {
        if (s.apu_len_counter[i] > 0) v |= (u8)(1 << i);
    }
    if (s.dmc_bytes_remaining > 0) v |= 0x10;
    if (s.apu_frame_irq_flag) v |= 0x40;
    if (s.dmc_irq_flag) v |= 0x80;
    s.apu_frame_irq_flag = 0;
    return v;
}

NESLE_FN void apu_write(Nes& n, u16 addr, u8 v) {
    FlatState& s = n.st;
    n.apu_length_writes_pending = true;
    switch (addr) {
        case 0x4000: s.apu_len_new_halt[0] = (v & 0x20) != 0; break;
        case 0x4004: s.apu_len_new_halt[1] = (v & 0x20) != 0; break;
        case 0x4008: s.apu_len_new_halt[2] = (v & 0x80) != 0; break;
        case 0x400C: s.apu_len_new_halt[3] = (v & 0x20) != 0; break;
        case 0x4003: len_load(s, 0, v >> 3); break;
        case 0x4007: len_load(s, 1, v >> 3); break;
        case 0x400B: len_load(s, 2, v >> 3); break;
        case 0x400F: len_load(s, 3, v >> 3); break;
        case 0x4010:
        case 0x4011:
        case 0x4012:
        case 0x4013: dmc_write(s, addr, v); break;
        case 0x4015:
            for (int i = 0; i < 4; i++) len_set_enabled(s, i, (v & (1 << i)) != 0);
            s.dmc_irq_flag = 0;
            dmc_set_enabled(s, (v & 0x10) != 0, s.apu_odd_cycle);
            break;
        case 0x4017: frame_write(s, v, s.apu_odd_cycle); break;
        default: break;
    }
}

NESLE_FN bool apu_irq(const FlatState& s) { return s.apu_frame_irq_flag || s.dmc_irq_flag; }
