//! Plays an input movie from power-on and dumps the 2 KiB of work RAM after every frame.
//!
//! The movie is one byte per frame (nesle's bit order: bit 0 A, 1 B, 2 Select, 3 Start, 4 Up,
//! 5 Down, 6 Left, 7 Right, pad 1). The output is `frames x 2048` bytes. Used by
//! tests/python/test_alignment_cynes.py when the `nesle._native` extension is not built.
//!
//! ```text
//! cargo run --release -p nes-core --example movie -- ROM MOVIE OUT
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [rom, movie, out] = args.as_slice() else {
        eprintln!("usage: movie ROM MOVIE OUT");
        std::process::exit(2);
    };
    let read = |p: &str| {
        std::fs::read(p).unwrap_or_else(|e| {
            eprintln!("movie: {p}: {e}");
            std::process::exit(2)
        })
    };
    let mut nes = nes_core::Console::new(&read(rom)).unwrap_or_else(|e| {
        eprintln!("movie: {rom}: {e}");
        std::process::exit(2)
    });
    nes.set_render(false);
    let movie = read(movie);
    let mut dump = Vec::with_capacity(movie.len() * 0x800);
    for &buttons in &movie {
        nes.set_buttons(0, buttons);
        nes.run_frame();
        dump.extend_from_slice(nes.ram());
    }
    if let Err(e) = std::fs::write(out, dump) {
        eprintln!("movie: {out}: {e}");
        std::process::exit(2);
    }
}
