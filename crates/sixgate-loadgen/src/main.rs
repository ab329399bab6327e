//! `sixgate-loadgen send …` / `sixgate-loadgen recv …`; see `--help`.

use std::process::ExitCode;

use clap::Parser;
use sixgate_loadgen::cli::{Cli, Command};
use sixgate_loadgen::recv::{Receiver, RecvReport};
use sixgate_loadgen::send::{SendReport, send};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Send(a) => send(&a.options()).map(|r| {
            if a.json {
                println!("{}", serde_json::to_string(&r).expect("report serializes"));
            } else {
                print_send(&r);
            }
        }),
        Command::Recv(a) => Receiver::bind(a.options())
            .and_then(Receiver::run)
            .map(|r| {
                if a.json {
                    println!("{}", serde_json::to_string(&r).expect("report serializes"));
                } else {
                    print_recv(&r);
                }
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sixgate-loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print_send(r: &SendReport) {
    let target = if r.target_pps == 0 {
        "unpaced".to_string()
    } else {
        format!("{} pps", r.target_pps)
    };
    println!(
        "sent {} packets ({} B IP, {} B payload) to {} in {:.3} s: offered {:.0} pps (target {target})",
        r.packets, r.ip_bytes, r.payload_bytes, r.dst, r.elapsed_s, r.offered_pps
    );
    println!(
        "behind schedule: {} packets ({:.4} %), worst batch {:.0} us late; {} sendmmsg calls",
        r.behind_packets, r.behind_pct, r.max_late_us, r.syscalls
    );
    if r.send_errors > 0 {
        println!(
            "send errors: {} (first: {})",
            r.send_errors,
            r.first_error.as_deref().unwrap_or("?")
        );
    }
}

fn print_recv(r: &RecvReport) {
    println!(
        "received {} packets, {} payload bytes on {} in {:.3} s (stopped by {})",
        r.packets, r.bytes, r.bind, r.elapsed_s, r.stopped_by
    );
    println!(
        "delivered {:.0} pps over {:.3} s first-to-last; socket drops {} (rcvbuf {} B)",
        r.pps, r.first_to_last_s, r.socket_drops, r.rcvbuf
    );
}
