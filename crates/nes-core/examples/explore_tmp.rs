fn main() {
    let rom = std::fs::read(std::env::var("ROM").unwrap()).unwrap();
    let mut nes = nes_core::Console::new(&rom).unwrap();
    let script: Vec<(u32,u8)> = std::env::args().skip(1).map(|a| { let (f,b)=a.split_once(':').unwrap(); (f.parse().unwrap(), u8::from_str_radix(b,16).unwrap()) }).collect();
    let addrs: Vec<usize> = std::env::var("ADDRS").unwrap().split(',').map(|s| usize::from_str_radix(s,16).unwrap()).collect();
    let n: u32 = std::env::var("N").unwrap().parse().unwrap();
    let mut prev = vec![];
    for f in 0..n {
        let mut b = 0; for &(ff,bb) in &script { if f >= ff { b = bb; } }
        nes.set_buttons(0, b);
        nes.run_frame();
        let v: Vec<u8> = addrs.iter().map(|&a| nes.ram()[a]).collect();
        if v != prev { println!("{f} btn={b:02x} {:02x?} fault={:?}", v, nes.fault()); prev = v; }
    }
}
