//! Pins the draws of every sampler that feeds a simulation, bit for bit:
//! the exponential gaps, Zipf ranks, binomial draws (both methods), a sampled
//! count workload's multinomial counts and shuffled first events, and two
//! timed workloads end to end (a
//! Zipf-keyed MMPP and a diurnal rate, which goes through `libm::cos`).
//! The numbers were generated once from the implementation and are data:
//! any change to a sampler, to the order of its draws, or to `libm` shows
//! here first. Regenerate with `RATELAB_PRINT_PINS=1 cargo test --test
//! samplers -- --nocapture` only for a change that is meant.

use ratelab::rng::sim_rng;
use ratelab::workload::binomial::binomial;
use ratelab::workload::dist::{Exp, Zipf};
use ratelab::workload::keys::KeyChoice;
use ratelab::workload::timed::TimedWorkload;
use ratelab::workload::CountWorkload;

fn exp_bits(rate: f64, seed: u64, n: usize) -> Vec<u64> {
    let e = Exp::new(rate).unwrap();
    let mut r = sim_rng(seed);
    (0..n).map(|_| e.sample(&mut r).to_bits()).collect()
}

fn zipf_ranks(keys: u64, s: f64, seed: u64, n: usize) -> Vec<u64> {
    let z = Zipf::new(keys, s).unwrap();
    let mut r = sim_rng(seed);
    (0..n).map(|_| z.sample(&mut r)).collect()
}

fn timed(w: &TimedWorkload, n: usize) -> Vec<u64> {
    w.events(9).take(n).flat_map(|(t, k)| [t, k]).collect()
}

fn mmpp() -> TimedWorkload {
    TimedWorkload::Mmpp {
        keys: KeyChoice::Zipf {
            keys: 5000,
            s: 1.05,
        },
        rates: [50.0, 2000.0],
        mean_dwell_s: [0.2, 0.05],
        duration_s: 60.0,
    }
}

fn diurnal() -> TimedWorkload {
    TimedWorkload::Diurnal {
        keys: KeyChoice::Uniform { keys: 7 },
        base_rate: 5.0,
        peak_rate: 400.0,
        period_s: 3.0,
        duration_s: 60.0,
    }
}

fn check(name: &str, got: &[u64], want: &[u64]) {
    if std::env::var_os("RATELAB_PRINT_PINS").is_some() {
        let body: Vec<String> = got.iter().map(|v| format!("{v:#x}")).collect();
        println!("const {name}: &[u64] = &[{}];", body.join(", "));
        return;
    }
    assert_eq!(got.len(), want.len(), "{name}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{name}[{i}]: {g:#x} != {w:#x}");
    }
}

#[test]
fn exponential_draws_are_pinned() {
    check("EXP_1", &exp_bits(1.0, 11, 200), EXP_1);
    check("EXP_350", &exp_bits(350.0, 12, 100), EXP_350);
}

#[test]
fn zipf_draws_are_pinned() {
    check(
        "ZIPF_1000_1_1",
        &zipf_ranks(1000, 1.1, 21, 200),
        ZIPF_1000_1_1,
    );
    check(
        "ZIPF_1M_0_8",
        &zipf_ranks(1_000_000, 0.8, 22, 100),
        ZIPF_1M_0_8,
    );
    check("ZIPF_50_1", &zipf_ranks(50, 1.0, 23, 100), ZIPF_50_1);
    check("ZIPF_10_0", &zipf_ranks(10, 0.0, 24, 100), ZIPF_10_0);
}

/// Binomial draws over both methods (inversion below n·p = 10, BTRD above)
/// and both tails of p = ½.
fn binomial_draws(seed: u64) -> Vec<u64> {
    let mut r = sim_rng(seed);
    let cases = [
        (5u64, 0.3),
        (1000, 0.004),
        (40, 0.5),
        (200, 0.9),
        (100_000, 0.37),
        (1 << 40, 1e-6),
    ];
    (0..40)
        .flat_map(|_| cases.map(|(n, p)| binomial(&mut r, n, p)))
        .collect()
}

/// A sampled workload end to end: its multinomial counts, then its first
/// events (the counts in chunked shuffled order).
fn sampled_counts_and_events() -> Vec<u64> {
    let w = CountWorkload::Zipf {
        keys: 3000,
        events: 200_000,
        s: 1.05,
    }
    .build(std::path::Path::new("pins"), "workload")
    .unwrap();
    let counts = w.counts(31);
    let mut out: Vec<u64> = counts[..60].to_vec();
    w.for_each_event(31, |k| {
        if out.len() < 160 {
            out.push(u64::from(k));
        }
    });
    out
}

#[test]
fn binomial_and_multinomial_draws_are_pinned() {
    check("BINOMIAL", &binomial_draws(41), BINOMIAL);
    check("SAMPLED", &sampled_counts_and_events(), SAMPLED);
}

#[test]
fn timed_workloads_are_pinned() {
    check("MMPP", &timed(&mmpp(), 150), MMPP);
    check("DIURNAL", &timed(&diurnal(), 150), DIURNAL);
}

#[rustfmt::skip]
const EXP_1: &[u64] = &[
    0x3fdc3ac2d0b10e88, 0x3fb83e4a7b1f7a2d, 0x3fe019539d62c36f, 0x3fe9cc81b83eac5d,
    0x3fce1a3026e2c447, 0x4000417fde90d92a, 0x3fcf6d2d8d4d5538, 0x3fdd0da84f09900a,
    0x400fbe29d2e3ccba, 0x3fc12856e5460257, 0x3fda1ec248db672c, 0x40119560840587c2,
    0x3fe01f8fdb88cd15, 0x3fb0f83a1ca9325a, 0x4000cbfdbc79ea3b, 0x3fbfe7b553563d19,
    0x3fc717b22b43c3da, 0x3f47a57387278ad9, 0x3fdd190fed42264c, 0x3fed9c91eedf7602,
    0x3fda4320e64150a6, 0x3fdfe7b6068aea75, 0x400a2e2886d260c0, 0x3fd176bf168fe057,
    0x3fcb10969827c9a0, 0x3fe1d12412c636cc, 0x3fc2d577146c7c4b, 0x3fe5a075d728ca13,
    0x3ff04beb82f61119, 0x3fd2db2851db0152, 0x3fc2cbe5ee639177, 0x3ff5569eb8a79525,
    0x3fd3ed201f50abfc, 0x3fe50acf2f6a34de, 0x3fe41057fe1e94b2, 0x3fde5e4ce0e9039a,
    0x3fe57fbcee87290c, 0x3fef754bba54c590, 0x3fb241aba753852b, 0x3fe4e92cd31e069b,
    0x3f9ceadd6cba3f21, 0x3fe2581a9f694bd8, 0x3ff9e99fb478e227, 0x3fd07539f754667b,
    0x3fdfb2644da058e8, 0x3fea0dd0ae837e47, 0x3fb582d59014d607, 0x3fcc475ee70093fe,
    0x3fd0f70fde5935a9, 0x3fc403ae926a1367, 0x3ffb1e075deba6fd, 0x3fcb9644459155aa,
    0x3ff65c787de05716, 0x3ff009097543087e, 0x3fa64b2cff8071c6, 0x3fe12ba4eb72e9e5,
    0x400ef241da59c9ce, 0x3ff50ed4a4c62d49, 0x4006a7e5423be51c, 0x3fc565722db80c87,
    0x3f8ad2477e59884a, 0x3fe204dd640d0f87, 0x3fd19d02865f5dfa, 0x3fea34e8eaa3f224,
    0x3fe9757d8955fa80, 0x3fb8d8c59403a752, 0x3fc8b72f95f75386, 0x400094e2ccbb37e9,
    0x3ff08966bb05560c, 0x3fe784439983d92c, 0x3fff46f75739e7cf, 0x3fcd7c687517f6b0,
    0x3fd33c6d76d01857, 0x3fd2561aea3305ec, 0x4001025f5f7816e8, 0x40117b952892d13e,
    0x3fd2c13b3a7176f3, 0x3ff918be8adc2ba9, 0x4003ac8eef5acb69, 0x3fa44a0669c81130,
    0x3fe58a55fbd700fc, 0x3fe0c13ffd171775, 0x3fdbf69e0868b9c1, 0x3f9b847e46f4db94,
    0x3fbd06a38de23b58, 0x3ff93120e7a9e712, 0x3fd960bd13420418, 0x3fcd0e70f3980f2e,
    0x3fd6eec59ba4a97c, 0x3ff32a33847b1428, 0x3ff7d6116b25e538, 0x3faf512d1daecccf,
    0x3f9f95e82befc8fd, 0x3fd0bead4b4f4e1f, 0x3ffac485b41fe922, 0x3fd75642601971bc,
    0x3feaade4d02cc2db, 0x3fe17a7b1b5ed710, 0x3ff213a5a4162e04, 0x4002436bce7b59d7,
    0x400ed61489ba58d5, 0x4013b028c5850e4f, 0x3fc8acfaa704e92c, 0x3ff45fdbf164ef03,
    0x400739e17bed9e9f, 0x3ff99a77f9fa13a0, 0x3fc03d99cfd17293, 0x3fc8d9f3ec21fd6e,
    0x4001490178e0470b, 0x3f476090644416f1, 0x3fd2d4380cd03af3, 0x3fde478fc65ea296,
    0x3ffc04b637354aae, 0x3fe2df40eadb1e97, 0x400e34f8759e00d3, 0x3fd4e775d1258542,
    0x3febfa4205058a93, 0x3fe14220140a091f, 0x3fe62148dbed938b, 0x3f72fe71d03207eb,
    0x4002594ceb2f8e41, 0x4002f372ea195bcf, 0x3fdb7b5d5a328140, 0x3fe0ce6a6f6f7c8c,
    0x40099f4856cb5b40, 0x3fe1d5f9521ecedc, 0x3fe732cb65cce39b, 0x3fea5eb8b0077a6c,
    0x3ffd0d1e9f05dc07, 0x3fdbdcbe22a84ef5, 0x3fee43e7ce7b961e, 0x3fe4047e4f3ceb4a,
    0x3fe84c3e943e5de0, 0x3fb7cf0e0dde0da2, 0x3feda2db64abf8f6, 0x3fea2d23556e468e,
    0x3fde1f0734cbd9e8, 0x3fe6d10fe592232a, 0x3fdbf8a039caa030, 0x3fe16be1a1272d2c,
    0x3ff828fdb8e03922, 0x3ffb44c7b3fc872d, 0x3fe6f3bc8b296fa8, 0x3fe4ba0eb4e9e3f4,
    0x400581a7b63c98cd, 0x3fe6901998f62cc4, 0x3ff3f15913be18d4, 0x3fc70aad760200d9,
    0x3ffe0b377b00056e, 0x3fefdf06b888b570, 0x3ff6c5db52e033a6, 0x3fc44fbbafdad7d7,
    0x3f704461960b4763, 0x3ff9b305bba4ec46, 0x4003a8a0b53d23d3, 0x3fc9a6aab59ae56c,
    0x3fefa918b7f6b0fe, 0x40007ee476f8db6b, 0x3ffe4b94d2fecb10, 0x3fe0e18f862fc182,
    0x3fd7987746ca89d4, 0x3fecbc92cdbeb15b, 0x3fd9e495436ea860, 0x401fe82370dc8d58,
    0x3ffb8ac08f031d02, 0x3fe91c4885a87111, 0x3fde200959c7fb5b, 0x40098dcefce0d25e,
    0x4002a40e54634afa, 0x3fdb4d5cc1424a98, 0x3fd8f6525cbde7f5, 0x3fa8a0df3465106b,
    0x3fe4ccd379ac525b, 0x3fd7c3b521714130, 0x3fe3d1b48ef35fb9, 0x3fd3c9f90d7aab5a,
    0x3fddc60b9690f7bd, 0x3ffa26724035cc71, 0x40056d168c3e2d91, 0x3ffa49193bbf3c98,
    0x3fe14e1b19d52c93, 0x3ff13565d9e10a4f, 0x4006db68334d510d, 0x3febf2f09a041abf,
    0x3fc947ef7da457c4, 0x3f7fa208dda70404, 0x3fed5cc12319877a, 0x3fe27b9402e7c378,
    0x3fec71f126150cc4, 0x3f975e681a7d095b, 0x3fbcc9267d6ac80e, 0x3fddb401a290b3fe,
    0x3ff8738ddb934b86, 0x3fe16bcc27070ba8, 0x3fc136d2fd080690, 0x401c4310e49f1e58,
    0x3ffa02a1322a5813, 0x400262e0c6a01ef0, 0x3fb5440e474233f8, 0x4006fc4341e069a5,
];

#[rustfmt::skip]
const EXP_350: &[u64] = &[
    0x3ecd0e6f2f14c707, 0x3f717e49535b26c0, 0x3f6b6060466c3184, 0x3f4bbfcba224ae26,
    0x3f65fe9343d37bc3, 0x3f75e31930fa1c1a, 0x3f650b8cd5d0c7fd, 0x3f5a228a95a27fe7,
    0x3f2f4749c3ee55fd, 0x3f367f93451a1206, 0x3f32ca9c7b8cd5d9, 0x3f6c2edb7698c27f,
    0x3f43502d58d24378, 0x3f5bbc97828e3787, 0x3f68c94b4915c25e, 0x3ef6e2bd783ee1f5,
    0x3f333c5f4e0ea0ce, 0x3f7388b721aec349, 0x3f5145ee7bd1b150, 0x3f7e9c0cb0e9628c,
    0x3f555602ff3b490e, 0x3f6554422fd779a1, 0x3f6bfc8c27ac66da, 0x3f5fdb6fd4905955,
    0x3f3894d802f4f34e, 0x3f5b525ca3b0a2d1, 0x3f56ff32abf36900, 0x3f794c23e1b400c0,
    0x3f69d4efbc7c6225, 0x3f67f46594dd1f9a, 0x3f71612b45ee89ff, 0x3f5b3e1db44274ec,
    0x3f6042c7b2562afe, 0x3f5c8ab5ae41e774, 0x3f672b28c63a4fdb, 0x3f5fbccbc536a984,
    0x3f340f0330e0b3b8, 0x3f622c5f5dac30a6, 0x3f6272701621333c, 0x3f49b4d1a667e043,
    0x3f41b9a2cf2641a2, 0x3f4f75c4ac91df23, 0x3f7b7b22e7df5fe6, 0x3f7c79da4a25ad50,
    0x3f6b96ecd5d7e2f6, 0x3f3f18b337753a6e, 0x3f395e4a9dd4894b, 0x3f30b8a8c57c95c8,
    0x3f66e02150bf4c29, 0x3f60840943a874e3, 0x3f3ace48e0352226, 0x3f61a39683e0905b,
    0x3f850817d432ac2d, 0x3f60f8544393bd73, 0x3f48133abcd9b2c4, 0x3f53ea82536bc763,
    0x3f7a6107be65a80d, 0x3f0c0531cc195bc0, 0x3f51e2f1477488c6, 0x3f80bddd88fea748,
    0x3f6c8a63436d451c, 0x3f69a182e8279d2a, 0x3f7727fd89b7a14f, 0x3f7bd0a98c6cf3a4,
    0x3f835136230c5c4c, 0x3f52561c5c3d1a10, 0x3f60dcfb3cfde701, 0x3f70b2a4913abc45,
    0x3f5b5d57c54b7a46, 0x3f459ad0ec54adb2, 0x3f1fc9539f61e2b4, 0x3f44c1baf9b303dc,
    0x3f2a5b4ff937350c, 0x3f6969be50e53e4c, 0x3f553047d35f72aa, 0x3f3b7c793cb5d014,
    0x3f6e42315c9b541f, 0x3f44b410bec64be5, 0x3f88f800c3c58a66, 0x3f537a17fb4a7c6f,
    0x3f5aa7855386a492, 0x3f666729ad730201, 0x3f3e6748d4195a2f, 0x3f5581db44969d84,
    0x3f5a42f2b43971e4, 0x3f70d93b66933a17, 0x3f79650c134197da, 0x3f38129c351a20fa,
    0x3f512fa48abe3cba, 0x3f5fe0fe16929788, 0x3f4eb2786c2ed427, 0x3f516d4bc2ee9cb1,
    0x3f52a30e98d94b32, 0x3f376c7ab4a9b3a4, 0x3f73e7a04b2bda1f, 0x3f656c5e03f19610,
    0x3f322c3a604bf346, 0x3f752518e27d2297, 0x3f7e5ee7e0a09ff3, 0x3f683f5587bad55c,
];

#[rustfmt::skip]
const ZIPF_1000_1_1: &[u64] = &[
    15, 5, 447, 231, 26, 1, 6, 1, 1, 14,
    3, 13, 3, 7, 105, 63, 330, 19, 4, 1,
    653, 1, 3, 159, 98, 718, 1, 22, 4, 61,
    1, 17, 21, 62, 2, 38, 19, 18, 1, 41,
    22, 2, 54, 121, 11, 2, 3, 496, 2, 30,
    5, 55, 10, 1, 1, 832, 98, 10, 761, 1,
    9, 12, 200, 8, 101, 27, 1, 79, 2, 1,
    1, 413, 1, 11, 27, 1, 1, 218, 483, 365,
    3, 469, 85, 5, 27, 9, 596, 28, 208, 201,
    1, 3, 952, 138, 37, 1, 1, 286, 2, 1,
    2, 7, 9, 1, 280, 5, 72, 5, 25, 184,
    5, 19, 16, 17, 872, 6, 6, 1, 5, 1,
    783, 3, 1, 5, 29, 972, 1, 4, 7, 727,
    11, 18, 770, 1, 2, 2, 16, 20, 7, 426,
    657, 1, 149, 133, 1, 4, 70, 1, 669, 1,
    27, 14, 19, 120, 1, 10, 20, 432, 1, 190,
    45, 1, 418, 30, 3, 2, 9, 1, 36, 2,
    24, 35, 4, 9, 275, 69, 23, 230, 194, 915,
    3, 1, 4, 9, 3, 400, 1, 23, 12, 51,
    18, 15, 8, 52, 164, 27, 470, 331, 3, 188,
];

#[rustfmt::skip]
const ZIPF_1M_0_8: &[u64] = &[
    3267, 433857, 3882, 905340, 902164, 49, 52724, 379263, 150728, 22166,
    701031, 475818, 458881, 508086, 200342, 27, 318319, 251, 10774, 447970,
    98944, 17090, 15721, 26950, 12807, 1, 64379, 508546, 16257, 27974,
    632704, 69299, 87650, 556, 2220, 27835, 8401, 12773, 928074, 1100,
    18161, 706, 4, 27916, 464050, 5, 78179, 4, 299970, 2041,
    106191, 2962, 53905, 42151, 11413, 86986, 45692, 533383, 728959, 151386,
    14704, 20121, 481983, 640178, 151260, 4, 18, 13, 227597, 33097,
    8894, 17035, 330915, 3, 13606, 29323, 511154, 2, 635339, 711835,
    296751, 355119, 116, 63, 670764, 60436, 269, 1, 1682, 21270,
    229628, 951, 315054, 74321, 308, 5462, 10558, 531, 3899, 3409,
];

#[rustfmt::skip]
const ZIPF_50_1: &[u64] = &[
    4, 17, 13, 1, 2, 36, 49, 4, 24, 1,
    37, 4, 39, 3, 7, 1, 17, 5, 11, 1,
    7, 6, 1, 37, 1, 4, 1, 1, 4, 5,
    19, 2, 4, 1, 6, 1, 43, 7, 45, 1,
    25, 22, 15, 1, 4, 1, 3, 28, 25, 2,
    18, 4, 11, 47, 42, 2, 18, 1, 1, 5,
    45, 1, 1, 25, 31, 45, 31, 16, 11, 14,
    31, 27, 2, 2, 23, 40, 4, 11, 7, 6,
    3, 2, 41, 1, 1, 4, 6, 1, 4, 7,
    28, 5, 12, 8, 11, 2, 13, 2, 35, 4,
];

#[rustfmt::skip]
const ZIPF_10_0: &[u64] = &[
    1, 4, 1, 3, 8, 6, 10, 5, 4, 4,
    9, 4, 10, 9, 10, 2, 6, 2, 4, 10,
    1, 7, 1, 7, 2, 4, 2, 4, 8, 10,
    4, 7, 4, 3, 1, 5, 9, 3, 7, 1,
    8, 7, 10, 1, 1, 1, 4, 7, 3, 6,
    1, 6, 7, 1, 8, 2, 4, 2, 9, 4,
    9, 2, 3, 4, 8, 5, 5, 3, 6, 1,
    1, 7, 10, 5, 5, 6, 10, 4, 4, 3,
    9, 8, 6, 4, 9, 4, 7, 9, 2, 2,
    5, 3, 5, 4, 9, 5, 10, 2, 7, 7,
];

#[rustfmt::skip]
const MMPP: &[u64] = &[
    5342985, 3067, 6602130, 99, 7640043, 1750, 7738293, 1, 7854669, 5,
    8345037, 1, 9178819, 1286, 10667056, 11, 11177841, 0, 11209792, 0,
    11427831, 86, 11623104, 0, 11779046, 1, 12025257, 37, 12686705, 418,
    12829959, 532, 12863478, 159, 13443908, 183, 13924766, 23, 14140210, 193,
    14594340, 0, 15201512, 13, 15228912, 9, 16825530, 1353, 17334182, 501,
    18273228, 6, 18555948, 2644, 18599998, 1466, 19027234, 21, 20411130, 161,
    20542048, 1, 21281639, 923, 21511595, 5, 21569348, 1435, 21889748, 381,
    22094124, 1, 22257709, 0, 22507581, 185, 22603958, 2, 22919886, 2,
    23613031, 139, 23614385, 2267, 23650582, 2344, 23805854, 35, 25342318, 95,
    25609883, 159, 25621905, 351, 27596676, 291, 28153302, 103, 29435826, 695,
    29649327, 9, 29784500, 42, 30188847, 895, 31217664, 428, 32648039, 629,
    33295533, 6, 33337913, 872, 34589223, 3336, 35147415, 0, 36187222, 666,
    38007409, 437, 38923526, 52, 38987469, 2, 40171311, 44, 40531777, 837,
    42188641, 5, 42494856, 2058, 43007838, 2, 43415848, 9, 43588609, 2097,
    43677973, 459, 44267736, 3, 45128531, 692, 45258540, 0, 45330889, 3,
    45505129, 6, 45841771, 1, 45847667, 1, 45982414, 4521, 46007767, 0,
    46025635, 0, 46092024, 1, 46531037, 0, 46598967, 1281, 46771617, 235,
    47772939, 13, 47886024, 5, 48286425, 656, 48338762, 1312, 48373636, 35,
    49270426, 183, 49549931, 0, 49789972, 495, 50018764, 0, 51104142, 1649,
    51179506, 922, 51436609, 473, 53471902, 0, 53558827, 2, 53590498, 16,
    53606558, 476, 54831773, 7, 55502337, 16, 55627364, 14, 56010253, 909,
    56147070, 2699, 56401099, 12, 56640116, 35, 56678543, 10, 58020677, 0,
    58220422, 211, 58226511, 121, 58403631, 2827, 59320398, 0, 59322236, 173,
    60591571, 4, 60718931, 0, 62288932, 830, 62359815, 3065, 62419054, 1,
    62779843, 40, 62874876, 6, 62979750, 2537, 63617098, 1271, 63678908, 0,
    63894158, 35, 64709976, 12, 64732888, 53, 64848475, 0, 64870337, 357,
    64889563, 87, 65314821, 0, 65519579, 2718, 67550908, 0, 68107118, 2,
    69399963, 85, 70259516, 78, 70647421, 689, 71536455, 28, 95603785, 1,
    118051543, 3, 118335976, 16, 121637842, 273, 144184164, 25, 144355289, 1,
    144951853, 10, 145997605, 1, 146463854, 9, 146714079, 9, 146779113, 70,
];

#[rustfmt::skip]
const DIURNAL: &[u64] = &[
    97176955, 0, 152051145, 4, 201855179, 5, 202528913, 0, 210378905, 6,
    260986076, 2, 264970085, 4, 273595526, 5, 279463138, 2, 294651031, 0,
    320043181, 3, 323976637, 6, 347388205, 4, 350929579, 1, 368807544, 2,
    370597378, 3, 379930247, 3, 383299074, 2, 406363307, 2, 406458131, 5,
    408331672, 1, 410132298, 4, 429031493, 6, 448563098, 0, 455918310, 6,
    458869735, 3, 476289131, 0, 477551638, 0, 487537409, 4, 492465421, 6,
    493615984, 1, 509057445, 0, 560204053, 4, 564797052, 5, 578059070, 3,
    605511419, 5, 615992582, 6, 619128222, 0, 619230163, 3, 621644459, 0,
    635912210, 1, 636831620, 2, 642237956, 1, 643473578, 1, 654445031, 0,
    656822774, 0, 665972988, 0, 666696363, 3, 668645990, 5, 669615281, 4,
    675709794, 5, 683203961, 4, 683563410, 6, 700418637, 3, 702465850, 1,
    714177620, 6, 729897837, 1, 730591239, 0, 741499872, 0, 744119917, 0,
    744950624, 2, 745533631, 4, 745953439, 6, 746391833, 5, 751080079, 3,
    751891525, 1, 755113556, 6, 757180687, 4, 769536667, 3, 776123131, 6,
    778516583, 0, 789663231, 4, 793675240, 3, 800864734, 1, 802189988, 3,
    802936107, 6, 804615947, 0, 811868886, 2, 813106600, 5, 813456439, 6,
    815234719, 4, 817913203, 2, 824523016, 1, 826020802, 0, 827003731, 6,
    827019041, 0, 833695837, 5, 834989138, 3, 835233250, 0, 838450174, 2,
    838787316, 5, 845575431, 0, 846300380, 4, 848284132, 2, 848532545, 2,
    850754991, 2, 854174297, 5, 856007919, 4, 857088153, 5, 860091698, 1,
    862739668, 1, 869229173, 1, 872084696, 3, 874051652, 6, 876578676, 6,
    890340077, 4, 897684413, 4, 897690637, 0, 899531763, 0, 909481382, 6,
    910956754, 6, 915441818, 0, 915827096, 6, 916935200, 1, 918875397, 2,
    921226197, 0, 925263162, 0, 931469375, 1, 931637827, 3, 937513045, 4,
    943426693, 4, 946108890, 3, 947445148, 4, 957940486, 5, 960663910, 4,
    962285015, 2, 964919589, 0, 967759475, 5, 969248218, 3, 977108217, 0,
    977252743, 5, 978373143, 6, 978600010, 1, 982569243, 1, 987193954, 4,
    987238373, 4, 1004675506, 6, 1005876291, 3, 1006218076, 4, 1006847387, 3,
    1008498329, 0, 1010055454, 0, 1014070016, 3, 1017922069, 5, 1018956476, 4,
    1027260514, 4, 1029407580, 2, 1031431236, 5, 1031833177, 4, 1032918517, 4,
];

#[rustfmt::skip]
const BINOMIAL: &[u64] = &[
    0x2, 0x0, 0x12, 0xb3, 0x8ed4, 0x10c136, 0x2, 0x5,
    0xe, 0xb9, 0x9195, 0x10c8ac, 0x3, 0x7, 0x16, 0xb2,
    0x9058, 0x10cb10, 0x2, 0x2, 0x14, 0xb6, 0x909f, 0x10c4c5,
    0x2, 0x2, 0x11, 0xaf, 0x8f88, 0x10c9f9, 0x1, 0x3,
    0x15, 0xb7, 0x9091, 0x10ca7d, 0x0, 0x6, 0x15, 0xb3,
    0x9056, 0x10cd1b, 0x0, 0x5, 0x14, 0xb0, 0x9135, 0x10c4f5,
    0x2, 0x1, 0x16, 0xb4, 0x9043, 0x10c69b, 0x2, 0x3,
    0x12, 0xb9, 0x9066, 0x10c357, 0x2, 0x3, 0x18, 0xb2,
    0x903d, 0x10c9bc, 0x2, 0x5, 0x10, 0xb5, 0x9124, 0x10c187,
    0x1, 0x3, 0x16, 0xa9, 0x9107, 0x10ca15, 0x2, 0x2,
    0x19, 0xb9, 0x9158, 0x10c016, 0x1, 0x3, 0x13, 0xb5,
    0x9064, 0x10ca10, 0x0, 0x3, 0x14, 0xb4, 0x8fdd, 0x10c556,
    0x1, 0x3, 0x12, 0xb4, 0x905f, 0x10c6a7, 0x2, 0x8,
    0x13, 0xbb, 0x906d, 0x10c5d6, 0x2, 0x4, 0x11, 0xb5,
    0x9063, 0x10c5e9, 0x1, 0x5, 0x12, 0xb0, 0x91a3, 0x10c71a,
    0x2, 0x4, 0x16, 0xb8, 0x905b, 0x10c59f, 0x1, 0x2,
    0x14, 0xb2, 0x9062, 0x10c7d1, 0x2, 0x5, 0x10, 0xb5,
    0x9075, 0x10c5db, 0x0, 0x5, 0x13, 0xb1, 0x90f8, 0x10c9ea,
    0x2, 0x2, 0x13, 0xb9, 0x8f78, 0x10c2d6, 0x1, 0x2,
    0xd, 0xb7, 0x8f8d, 0x10ccef, 0x1, 0x1, 0x16, 0xae,
    0x909e, 0x10c40d, 0x2, 0x3, 0x12, 0xb2, 0x9159, 0x10cd06,
    0x1, 0x4, 0x18, 0xb4, 0x8fd0, 0x10c93b, 0x2, 0x4,
    0x15, 0xb1, 0x9022, 0x10c865, 0x1, 0x5, 0x17, 0xb7,
    0x906a, 0x10cc7c, 0x1, 0x2, 0x16, 0xba, 0x904f, 0x10c636,
    0x1, 0x5, 0x16, 0xb6, 0x900f, 0x10c716, 0x0, 0x2,
    0x13, 0xb1, 0x9024, 0x10c645, 0x2, 0x7, 0x19, 0xb2,
    0x9058, 0x10c89a, 0x0, 0x5, 0x13, 0xb7, 0x903d, 0x10c4c2,
    0x1, 0x3, 0x19, 0xb3, 0x903d, 0x10c3b1, 0x2, 0x2,
    0x19, 0xb7, 0x9064, 0x10cbc2, 0x1, 0x5, 0x12, 0xad,
    0x9156, 0x10c532, 0x2, 0x5, 0x14, 0xb9, 0x9167, 0x10c3d1,
];

#[rustfmt::skip]
const SAMPLED: &[u64] = &[
    0x6d50, 0x34c9, 0x22a7, 0x19a1, 0x140c, 0x1063, 0xe1e, 0xc69,
    0xaa7, 0x91c, 0x908, 0x844, 0x744, 0x709, 0x64a, 0x5b6,
    0x57d, 0x542, 0x4ec, 0x4b3, 0x451, 0x43a, 0x3f2, 0x3cc,
    0x3dc, 0x36f, 0x391, 0x359, 0x311, 0x328, 0x2cc, 0x297,
    0x2ba, 0x2ad, 0x295, 0x28b, 0x281, 0x249, 0x25d, 0x21b,
    0x21b, 0x1f0, 0x22a, 0x235, 0x1ff, 0x1ff, 0x1de, 0x1be,
    0x1c4, 0x19c, 0x199, 0x1c8, 0x1c1, 0x1a9, 0x1b1, 0x1a3,
    0x194, 0x188, 0x171, 0x181, 0x6, 0xb61, 0x195, 0x51,
    0xbc, 0x1, 0x3d1, 0xd3, 0x9, 0x15, 0x0, 0x15,
    0x30, 0x23d, 0x45, 0x20, 0x44, 0x342, 0x54, 0x1c,
    0x71, 0x7, 0x1, 0x1, 0x25, 0x1e, 0x896, 0x26,
    0x0, 0x59, 0x2, 0x4b, 0x1, 0x540, 0x3, 0x64,
    0x36, 0x0, 0x600, 0x1, 0x5, 0x0, 0x24, 0x78e,
    0x270, 0x3, 0x1a, 0x0, 0x8aa, 0x5, 0xa4, 0x16,
    0x23e, 0x1, 0xf, 0x74, 0x2e0, 0x87e, 0xe, 0xb71,
    0xc1, 0x15, 0x10, 0xfe, 0x160, 0x4, 0x3, 0xb2,
    0x6a8, 0x142, 0x0, 0x16, 0x2a8, 0x8, 0x4ab, 0x7,
    0x2c, 0x5, 0x120, 0x1af, 0x0, 0x5a, 0xce, 0x4a,
    0xb, 0x10d, 0x3a0, 0x2, 0x171, 0x9, 0x85, 0x2,
    0x1e, 0x5, 0xf6, 0x2, 0x32a, 0x6b9, 0x14, 0x657,
];
