import Foundation

/// Renders a report as the plain-text tables a person reads (and the README shows).
enum TableRenderer {
    static func render(_ report: BenchmarkReport) -> String {
        var out: [String] = []
        out.append("keychain-bench \(report.date)")
        out.append("Machine: \(report.machine.summary)")
        out.append("Load average: \(report.machine.loadAtStart) at start, \(report.machine.loadAtEnd) at end")
        out.append(
            "\(Format.count(report.settings.iterations)) timed iterations per operation and size after "
                + "\(report.settings.warmup) warm-up; \(report.settings.secretBytes)-byte secrets, "
                + "\(report.settings.accountsPerService) accounts per service.")
        out.append(
            "×floor = median ÷ the same-run floor's median; ÷engine = SecItem median ÷ engine median "
                + "(the cost of the compatibility layer).")
        out.append("")
        out.append(operationsTable(report))
        out.append("")
        out.append(floorTable(report))
        out.append("")
        if report.sizes.contains(where: { $0.keyOperations?.isEmpty == false }) {
            out.append(keysTable(report))
            out.append("")
        }
        if let growth = report.growth {
            out.append(growthTable(growth))
            out.append("")
        }
        out.append(lifecycleTable(report))
        out.append("")
        if let lookups = report.agentLookups {
            out.append(agentTable(lookups, saturation: report.agentSaturation))
            out.append("")
        }
        if let login = report.loginUnlock {
            out.append(loginUnlockTable(login))
            if let sealed = report.sealedLoginUnlock { out.append(sealedLoginUnlockTable(sealed)) }
            out.append("")
        }
        if let secretService = report.secretService {
            out.append(secretServiceTable(secretService))
            out.append("")
        }
        if let keePass = report.keePass {
            out.append(keePassTable(keePass))
            out.append("")
        }
        if let sshAgent = report.sshAgent {
            out.append(sshAgentTable(sshAgent))
            out.append("")
        }
        if let secureEnclave = report.secureEnclave {
            out.append(secureEnclaveTable(secureEnclave))
        }
        if let companion = report.companion {
            out.append(companionTable(companion))
            out.append("")
        }
        if let sync = report.sync {
            out.append(syncTable(sync))
            out.append("")
        }
        if !report.scripts.isEmpty {
            out.append(scriptsTable(report.scripts))
            out.append("")
        }
        out.append(targetsTable(report))
        if !report.notes.isEmpty {
            out.append("")
            out += report.notes.map { "Note: " + $0 }
        }
        return out.joined(separator: "\n")
    }

    /// Lays out rows in columns; `right` marks right-aligned columns.
    static func columns(_ rows: [[String]], right: Set<Int>) -> String {
        let widths = (0..<(rows.map(\.count).max() ?? 0)).map { column in
            rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return right.contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }

    private static func operationsTable(_ report: BenchmarkReport) -> String {
        var rows: [[String]] = [
            [
                "Operation", "Items", "Engine med", "p99", "×floor", "SecItem med", "p99", "×floor", "÷engine",
                "Floor med", "Floor",
            ]
        ]
        for operation in KeychainOperation.allCases {
            for size in report.sizes {
                guard let result = size.operation(operation) else { continue }
                rows.append([
                    operation.title, Format.count(size.items),
                    Format.duration(result.engine.medianMicroseconds), Format.duration(result.engine.p99Microseconds),
                    Format.ratio(result.engineRatio),
                    Format.duration(result.secItem.medianMicroseconds),
                    Format.duration(result.secItem.p99Microseconds), Format.ratio(result.secItemRatio),
                    Format.ratio(result.secItemOverEngine), Format.duration(result.floorMedianMicroseconds),
                    result.floorDescription,
                ])
            }
        }
        return columns(rows, right: [1, 2, 3, 4, 5, 6, 7, 8, 9])
    }

    private static func keysTable(_ report: BenchmarkReport) -> String {
        var rows: [[String]] = [
            ["Keys (same run)", "Items", "Median", "p99", "Reference med", "Ratio", "Target", "Reference"]
        ]
        for operation in KeyOperation.allCases {
            for size in report.sizes {
                guard let result = size.keyOperations?.first(where: { $0.operation == operation }) else { continue }
                rows.append([
                    operation.title, Format.count(size.items), Format.duration(result.summary.medianMicroseconds),
                    Format.duration(result.summary.p99Microseconds),
                    Format.duration(result.referenceMedianMicroseconds),
                    Format.ratio(result.ratio), operation.limit.map { "≤ " + Format.ratio($0) } ?? "—",
                    result.referenceDescription,
                ])
            }
        }
        var table = columns(rows, right: [1, 2, 3, 4, 5])
        if case .failure(let failure) = PKIFixture.shared {
            table += "\n\(KeyOperation.pkcs12Import.title), \(KeyOperation.trustEvaluate.title): \(failure)\n"
        }
        return table
    }

    private static func floorTable(_ report: BenchmarkReport) -> String {
        var rows: [[String]] = [["Floor (median / p99)"] + report.sizes.map { Format.count($0.items) + " items" }]
        for operation in FloorOperation.allCases {
            rows.append(
                [operation.title]
                    + report.sizes.map { size in
                        guard let summary = size.floor.first(where: { $0.operation == operation })?.summary else {
                            return "—"
                        }
                        return Format.duration(summary.medianMicroseconds) + " / "
                            + Format.duration(summary.p99Microseconds)
                    })
        }
        return columns(rows, right: Set(1...max(1, report.sizes.count)))
    }

    private static func growthTable(_ growth: GrowthResult) -> String {
        var rows: [[String]] = [
            ["Growth (engine, all sizes interleaved; median / p99)"] + growth.sizes.map { Format.count($0) + " items" }
                + ["largest ÷ smallest"]
        ]
        for (title, summaries) in [("find data (svc+acct)", growth.find), ("add", growth.add)] {
            let ratio = (summaries.last?.medianMicroseconds ?? 0) / (summaries.first?.medianMicroseconds ?? 1)
            rows.append(
                [title]
                    + summaries.map {
                        Format.duration($0.medianMicroseconds) + " / " + Format.duration($0.p99Microseconds)
                    } + [Format.ratio(ratio)])
        }
        return columns(rows, right: Set(1...(growth.sizes.count + 1)))
    }

    private static func lifecycleTable(_ report: BenchmarkReport) -> String {
        var rows: [[String]] = [["Open, password, memory, processes", "Items", "Median", "p99 / detail"]]
        for size in report.sizes {
            rows.append([
                "open existing keychain, no key derivation", Format.count(size.items),
                Format.duration(size.openWithoutKeyDerivation.medianMicroseconds),
                Format.duration(size.openWithoutKeyDerivation.p99Microseconds),
            ])
            if let crashed = size.openAfterCrash {
                rows.append([
                    "open after a crash, log checked for damage", Format.count(size.items),
                    Format.duration(crashed.open.medianMicroseconds),
                    "\(Format.bytes(Int64(crashed.logBytes))) log; the check alone "
                        + Format.duration(crashed.check.medianMicroseconds),
                ])
            }
        }
        if let open = report.openWithKeyDerivation {
            rows.append([
                "open + unlock, \(open.keyDerivation)", Format.count(open.items),
                Format.duration(open.openAndUnlock.medianMicroseconds),
                "unlock alone \(Format.duration(open.unlock.medianMicroseconds))",
            ])
        }
        if let change = report.passwordChange {
            rows.append([
                "password change, \(change.cheapKeyDerivation) (≈ no KDF)", Format.count(change.items),
                Format.duration(change.withCheapKeyDerivation.medianMicroseconds),
                Format.duration(change.withCheapKeyDerivation.p99Microseconds),
            ])
            rows.append([
                "password change, \(change.keyDerivation)", Format.count(change.items),
                Format.duration(change.withKeyDerivation.medianMicroseconds),
                "old and new password each derived once",
            ])
            if let rotation = change.rotation, let floor = change.rotationFloor {
                rows.append([
                    "password change rotating every key (set-keychain-password), \(change.cheapKeyDerivation)",
                    Format.count(change.items), Format.duration(rotation.medianMicroseconds),
                    "\(Format.ratio(rotation.medianMicroseconds / floor.medianMicroseconds)) its floor "
                        + "(AES-GCM + plain SQL, \(Format.duration(floor.medianMicroseconds)))",
                ])
            }
        }
        if let memory = report.memory {
            rows.append([
                "resident memory after open (\(memory.method))", Format.count(memory.items),
                Format.bytes(memory.residentAfterOpenBytes),
                "before open \(Format.bytes(memory.residentBeforeOpenBytes)); open took "
                    + Format.duration(memory.openMicroseconds),
            ])
            rows.append([
                "resident memory after a lookup", Format.count(memory.items),
                Format.bytes(memory.residentAfterLookupBytes),
                "peak \(Format.bytes(memory.peakBytes)); first lookup took "
                    + Format.duration(memory.firstLookupMicroseconds),
            ])
        }
        for process in report.processes {
            let items = process.items.map(Format.count) ?? ""
            if let summary = process.summary {
                rows.append([
                    process.command, items, Format.duration(summary.medianMicroseconds),
                    Format.duration(summary.p99Microseconds),
                ])
            } else {
                rows.append([process.command, items, "—", process.note ?? "not available"])
            }
        }
        return columns(rows, right: [1, 2])
    }

    /// Lookups served by `keychaind` beside the same lookups in this process.
    private static func agentTable(_ lookups: AgentLookupResult, saturation: AgentSaturationResult?) -> String {
        let items = Format.count(lookups.items)
        var rows: [[String]] = [["Lookups served by keychaind", "Items", "Median", "p99", "Ratio"]]
        guard let inProcess = lookups.inProcess, let agent = lookups.agent else {
            rows.append(["lookup through keychaind", items, "—", lookups.note ?? "not available"])
            return columns(rows, right: [1, 2, 3, 4])
        }
        rows.append([
            "find one item with its secret, in this process", items, Format.duration(inProcess.medianMicroseconds),
            Format.duration(inProcess.p99Microseconds), "1.00×",
        ])
        rows.append([
            "the same, served by keychaind (one connection)", items, Format.duration(agent.medianMicroseconds),
            Format.duration(agent.p99Microseconds), lookups.agentOverInProcess.map(Format.ratio) ?? "",
        ])
        if let roundTrip = lookups.roundTrip {
            rows.append([
                "a request-sized message to another process and back (socket floor)", "",
                Format.duration(roundTrip.medianMicroseconds), Format.duration(roundTrip.p99Microseconds),
                Format.ratio(roundTrip.medianMicroseconds / inProcess.medianMicroseconds),
            ])
        }
        if let overhead = lookups.agentOverhead {
            rows.append([
                "keychaind's and its client's work: served − in process − socket floor", "",
                Format.duration(overhead), "", Format.ratio(overhead / inProcess.medianMicroseconds),
            ])
        }
        if let first = lookups.firstLookup, let narrowed = lookups.firstLookupNarrowed {
            rows.append([
                "a new connection's first lookup (connect, authenticate, find, close)", items,
                Format.duration(first.medianMicroseconds), Format.duration(first.p99Microseconds), "1.00×",
            ])
            rows.append([
                "the same, narrowed to KEYCHAIN_ACCESS_GROUPS first (UseAccessGroups)", items,
                Format.duration(narrowed.medianMicroseconds), Format.duration(narrowed.p99Microseconds),
                Format.ratio(narrowed.medianMicroseconds / first.medianMicroseconds),
            ])
        }
        /// A lookup of a plain item, then of its twin that differs in `what`, against it.
        func twins(_ plain: Summary?, _ title: String, _ other: Summary?, _ what: String) {
            guard let plain, let other else { return }
            rows.append([
                title, "", Format.duration(plain.medianMicroseconds), Format.duration(plain.p99Microseconds), "1.00×",
            ])
            rows.append([
                what, "", Format.duration(other.medianMicroseconds), Format.duration(other.p99Microseconds),
                Format.ratio(other.medianMicroseconds / plain.medianMicroseconds),
            ])
        }
        twins(
            lookups.plainTwin, "find one item with its secret, served by keychaind (no access list)",
            lookups.listedLookup, "the same, its access list naming this program pinned by SHA-256")
        twins(
            lookups.plainHere, "find one item with its secret, in this process (no access control)",
            lookups.provenLookup, "the same, .userPresence, offering an evaluated LAContext's proof")
        if let here = lookups.inProcessOneCore, let there = lookups.agentOneCore {
            rows.append([
                "find one item with its secret, in this process, held on one CPU", items,
                Format.duration(here.medianMicroseconds), Format.duration(here.p99Microseconds), "1.00×",
            ])
            rows.append([
                "the same, served by a keychaind held on the same CPU", items,
                Format.duration(there.medianMicroseconds), Format.duration(there.p99Microseconds),
                lookups.agentOverInProcessOneCore.map(Format.ratio) ?? "",
            ])
        }
        if let one = lookups.oneClientPerSecond, let four = lookups.fourClientsPerSecond {
            rows.append(["lookups per second through keychaind, 1 client", items, "\(Int(one))/s", "", "1.00×"])
            rows.append([
                "lookups per second through keychaind, 4 clients at once", items, "\(Int(four))/s", "",
                lookups.fourOverOne.map(Format.ratio) ?? "",
            ])
        }
        if let items = lookups.memoryItems {
            rows.append([
                "keychaind resident memory (VmRSS) after lookups", Format.count(items),
                lookups.memoryBytes.map(Format.bytes) ?? (lookups.memoryNote ?? "not available"), "", "",
            ])
        }
        if let connections = lookups.concurrentConnections {
            rows.append([
                "\(Format.count(connections)) connections at once: lookups that failed", items,
                lookups.concurrentErrors.map { "\($0)" } ?? (lookups.concurrentNote ?? "not available"), "", "",
            ])
        }
        rows += saturationRows(saturation)
        return columns(rows, right: [1, 2, 3, 4])
    }

    /// `keychaind --pam login` against the key derivation and a Swift process, timed in the same rounds.
    static func loginUnlockTable(_ login: LoginUnlockResult) -> String {
        var rows: [[String]] = [["Login unlock (pam_keychain.so)", "Median", "p99", "Ratio"]]
        guard let unlock = login.unlock, let derivation = login.keyDerivation, let process = login.swiftProcess else {
            rows.append(["keychaind --pam login", login.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3])
        }
        let floor = derivation.medianMicroseconds + process.medianMicroseconds
        rows.append([
            "key derivation alone, \(login.keyDerivationName ?? "") (swift-crypto's own call)",
            Format.duration(derivation.medianMicroseconds), Format.duration(derivation.p99Microseconds), "",
        ])
        rows.append([
            "a Swift process that does nothing", Format.duration(process.medianMicroseconds),
            Format.duration(process.p99Microseconds), "",
        ])
        rows.append(["floor: the two together", Format.duration(floor), "", "1.00×"])
        rows.append([
            "keychaind --pam login: unlock the login keychain in the running agent",
            Format.duration(unlock.medianMicroseconds), Format.duration(unlock.p99Microseconds),
            login.unlockOverFloor.map(Format.ratio) ?? "",
        ])
        rows.append(pamRow(login))
        return columns(rows, right: [1, 2, 3])
    }

    /// The login through a PAM transaction (``PAMLogin``), against the same floor.
    static func pamRow(_ login: LoginUnlockResult) -> [String] {
        let name = "a login through PAM: pamtester authenticate + open_session, pam_keychain.so"
        guard let pam = login.throughPAM else { return [name, login.pamNote ?? "not available", "", ""] }
        return [
            name, Format.duration(pam.medianMicroseconds), Format.duration(pam.p99Microseconds),
            login.pamOverFloor.map(Format.ratio) ?? "",
        ]
    }

    /// `keychaind --pam login` with the login keychain sealed to a swtpm, against the key
    /// derivation and `tpm2_unseal` on the same swtpm, timed in the same rounds.
    static func sealedLoginUnlockTable(_ login: LoginUnlockResult) -> String {
        var rows: [[String]] = [["Sealed login unlock (swtpm)", "Median", "p99", "Ratio"]]
        guard let unlock = login.unlock, let derivation = login.keyDerivation, let unseal = login.tpmUnseal else {
            rows.append(["keychaind --pam login, sealed", login.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3])
        }
        rows.append([
            "key derivation alone, \(login.keyDerivationName ?? "") (swift-crypto's own call)",
            Format.duration(derivation.medianMicroseconds), Format.duration(derivation.p99Microseconds), "",
        ])
        rows.append([
            "tpm2_unseal on the same swtpm (a process)", Format.duration(unseal.medianMicroseconds),
            Format.duration(unseal.p99Microseconds), "",
        ])
        rows.append([
            "floor: the two together", Format.duration(derivation.medianMicroseconds + unseal.medianMicroseconds), "",
            "1.00×",
        ])
        rows.append([
            "keychaind --pam login: unlock the sealed login keychain in the running agent",
            Format.duration(unlock.medianMicroseconds), Format.duration(unlock.p99Microseconds),
            login.unlockOverFloor.map(Format.ratio) ?? "",
        ])
        rows.append(pamRow(login))
        if let plain = login.plainDeviceKeyOpen, let sealed = login.sealedDeviceKeyOpen {
            rows.append([
                "open a password-less keychain in process, plain device key file",
                Format.duration(plain.medianMicroseconds), Format.duration(plain.p99Microseconds), "",
            ])
            rows.append([
                "the same, device key file sealed to the swtpm (÷ plain open + tpm2_unseal)",
                Format.duration(sealed.medianMicroseconds), Format.duration(sealed.p99Microseconds),
                login.sealedDeviceKeyOverFloor.map(Format.ratio) ?? "",
            ])
        }
        return columns(rows, right: [1, 2, 3])
    }

    /// The lookup through an idle keychaind and, interleaved, through one under a hostile load.
    private static func saturationRows(_ saturation: AgentSaturationResult?) -> [[String]] {
        guard let saturation else { return [] }
        let items = Format.count(saturation.items)
        guard let idle = saturation.idle, let saturated = saturation.saturated else {
            return [["lookup through a saturated keychaind", items, saturation.note ?? "not available", "", ""]]
        }
        let load =
            "\(Format.count(saturation.idleConnections ?? 0)) idle connections + "
            + "\(saturation.halfSentMessages ?? 0) half-sent 16 MiB messages (\(saturation.halfSentCutOff ?? 0) cut off)"
        return [
            [
                "the same, served by an idle keychaind (floor of the next row)", items,
                Format.duration(idle.medianMicroseconds), Format.duration(idle.p99Microseconds), "1.00×",
            ],
            [
                "served by a keychaind under \(load)", items, Format.duration(saturated.medianMicroseconds),
                Format.duration(saturated.p99Microseconds), saturation.ratio.map(Format.ratio) ?? "",
            ],
            [
                "that keychaind's resident memory (VmRSS) under the load", "",
                saturation.agentResidentBytes.map(Format.bytes) ?? "not available", "", "",
            ],
        ]
    }

    /// Lookup processes on keychains filled by separate processes, interleaved with the
    /// Swift floor and `secret-tool lookup` on GNOME Keyring.
    private static func scriptsTable(_ scripts: [ScriptResult]) -> String {
        var rows: [[String]] = [
            ["Lookup processes, keychain filled by add processes", "Items", "Median", "p99", "÷floor", "÷secret-tool"]
        ]
        for script in scripts {
            let items = Format.count(script.items)
            if let floor = script.floor {
                rows.append([
                    "keychain-bench doing nothing (Swift floor)", items, Format.duration(floor.medianMicroseconds),
                    Format.duration(floor.p99Microseconds), "1.00×", "",
                ])
            }
            if let find = script.find {
                let fill = script.fillSeconds.map { String(format: "%.0f s", $0) } ?? "?"
                let log = script.logBytes.map { Format.bytes($0) } ?? "?"
                rows.append([
                    "security find-generic-password -w (filled in \(fill), log \(log))", items,
                    Format.duration(find.medianMicroseconds), Format.duration(find.p99Microseconds),
                    script.findOverFloor.map(Format.ratio) ?? "", script.findOverSecretTool.map(Format.ratio) ?? "",
                ])
            } else {
                rows.append(["security find-generic-password -w", items, "—", script.note ?? "not available"])
            }
            if let served = script.agentFind {
                rows.append([
                    "security find-generic-password -w, served by keychaind", items,
                    Format.duration(served.medianMicroseconds), Format.duration(served.p99Microseconds),
                    script.agentFindOverFloor.map(Format.ratio) ?? "",
                    script.agentFindOverSecretTool.map(Format.ratio) ?? "",
                ])
            } else {
                rows.append([
                    "security find-generic-password -w, served by keychaind", items, "—",
                    script.agentNote ?? "not available",
                ])
            }
            if let theirs = script.secretTool {
                rows.append([
                    "secret-tool lookup, GNOME Keyring (session collection)", items,
                    Format.duration(theirs.medianMicroseconds), Format.duration(theirs.p99Microseconds),
                    script.floor.map { Format.ratio(theirs.medianMicroseconds / $0.medianMicroseconds) } ?? "", "1.00×",
                ])
            } else {
                rows.append(["secret-tool lookup, GNOME Keyring", items, "—", script.secretToolNote ?? "not available"])
            }
        }
        return columns(rows, right: [1, 2, 3, 4, 5])
    }

    /// Two machines in one zone on a private PostgreSQL: push, pull, propagation, and the floor.
    private static func syncTable(_ result: SyncResult) -> String {
        let items = Format.count(result.items)
        var rows: [[String]] = [
            ["Sync (private PostgreSQL, loopback)", "Items", "Time", "Per item", "Against the floor"]
        ]
        if let note = result.note { rows.append(["sync", items, "—", "", note]) }
        func row(_ title: String, _ seconds: Double?, floor: Double?, floorTitle: String) {
            guard let seconds else { return }
            let ratio = floor.map {
                String(format: "%.2f× %@ (%@)", seconds / $0, floorTitle, Format.duration($0 * 1e6))
            }
            rows.append([
                title, items, Format.duration(seconds * 1e6),
                Format.duration(seconds * 1e6 / Double(max(1, result.items))), ratio ?? "",
            ])
        }
        row("push (seal, commit)", result.pushSeconds, floor: result.floorInsertSeconds, floorTitle: "plain INSERT")
        row(
            "pull (verify, open, apply)", result.pullSeconds, floor: result.floorSelectSeconds,
            floorTitle: "plain SELECT")
        if let propagation = result.propagation {
            rows.append([
                "one item, add to the other machine (p99 \(Format.duration(propagation.p99Microseconds)))", "1",
                Format.duration(propagation.medianMicroseconds), "", "",
            ])
        }
        for (title, pushes) in [
            ("1 machine alone, one add and one round at a time", result.singlePushes),
            ("\(SyncResult.pushers) machines at once, one add and one round each", result.concurrentPushes),
        ] {
            guard let pushes else { continue }
            rows.append([
                title, Format.count(pushes.pushes), Format.duration(pushes.seconds * 1e6),
                Format.duration(pushes.seconds * 1e6 / Double(max(1, pushes.pushes))),
                String(format: "%.0f pushes/s (one zone: its commits are serial)", pushes.perSecond),
            ])
        }
        return columns(rows, right: [1, 2, 3])
    }

    /// `keychaind --secret-service` against GNOME Keyring, each on a private bus, interleaved.
    /// KeePass databases moved in and written out, against libargon2's own call and the same
    /// adds or reads, timed in the same rounds.
    static func keePassTable(_ result: KeePassResult) -> String {
        var rows: [[String]] = [["KeePass databases (KDBX 4)", "Entries", "Median", "p99", "Ratio"]]
        let items = Format.count(result.items)
        guard let moveIn = result.moveIn, let adds = result.adds, let export = result.export, let reads = result.reads,
            let argon2 = result.argon2
        else {
            rows.append(["moving a KeePass database in", items, result.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3, 4])
        }
        func row(_ name: String, _ summary: Summary, _ ratio: String = "") -> [String] {
            [name, items, Format.duration(summary.medianMicroseconds), Format.duration(summary.p99Microseconds), ratio]
        }
        rows.append(row("Argon2id alone, 64 MiB, 10 passes (libargon2's own call)", argon2))
        rows.append(row("the same items added in one transaction", adds))
        rows.append(
            row(
                "moving the database in (Argon2, decrypt, parse, add)", moveIn,
                result.moveInOverFloor.map { "÷ floor " + Format.ratio($0) } ?? ""))
        rows.append(row("the same items read with their secrets", reads))
        rows.append(
            row(
                "writing the database (read, Argon2, encrypt)", export,
                result.exportOverFloor.map { "÷ floor " + Format.ratio($0) } ?? ""))
        return columns(rows, right: [1, 2, 3, 4])
    }

    /// An Ed25519 signature through keychaind's agent and OpenSSH's, interleaved, against
    /// swift-crypto's own signature.
    static func sshAgentTable(_ result: SSHAgentResult) -> String {
        var rows: [[String]] = [["SSH agent (one connection each, interleaved)", "Median", "p99", "Ratio"]]
        guard let ours = result.ours, let openSSH = result.openSSH, let floor = result.floor else {
            rows.append(["an Ed25519 signature through keychaind", result.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3])
        }
        func row(_ name: String, _ summary: Summary, _ ratio: String = "") -> [String] {
            [name, Format.duration(summary.medianMicroseconds), Format.duration(summary.p99Microseconds), ratio]
        }
        rows.append(row("Ed25519 signature in process (swift-crypto's own call)", floor))
        rows.append(row("through OpenSSH's ssh-agent", openSSH))
        rows.append(
            row(
                "through keychaind's agent (keychain read, sign)", ours,
                result.oursOverOpenSSH.map { "÷ ssh-agent " + Format.ratio($0) } ?? ""))
        return columns(rows, right: [1, 2, 3])
    }

    /// A Secure Enclave key's P-256 signature in a swtpm, each way, against `tpm2_sign` on the
    /// same swtpm and swift-crypto's signature in memory.
    static func secureEnclaveTable(_ result: SecureEnclaveResult) -> String {
        var rows: [[String]] = [["Secure Enclave key in a swtpm (interleaved)", "Median", "p99", "Ratio"]]
        guard let agent = result.agent, let engine = result.engine, let tools = result.tpm2Sign,
            let software = result.software
        else {
            rows.append(["a P-256 signature in the TPM", result.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3])
        }
        func row(_ name: String, _ summary: Summary, _ ratio: String = "") -> [String] {
            [name, Format.duration(summary.medianMicroseconds), Format.duration(summary.p99Microseconds), ratio]
        }
        rows.append(row("P-256 signature in memory (swift-crypto's own call)", software))
        rows.append(row("tpm2_sign (load the key from its context, sign)", tools))
        rows.append(
            row(
                "in this process (engine: keychain read, TPM load, sign)", engine,
                result.engineOverTools.map { "÷ tpm2_sign " + Format.ratio($0) } ?? ""))
        rows.append(
            row(
                "through keychaind (SecKeyCreateSignature's path)", agent,
                result.agentOverTools.map { "÷ tpm2_sign " + Format.ratio($0) } ?? ""))
        return columns(rows, right: [1, 2, 3])
    }

    /// A `.companion` read with a touch of a software key, against libfido2's own assertion on it.
    static func companionTable(_ result: CompanionResult) -> String {
        var rows: [[String]] = [["Companion: a software FIDO2 key over a socket (interleaved)", "Median", "p99", "Ratio"]]
        guard let read = result.read, let assertion = result.assertion else {
            rows.append(["a .companion read with a touch", result.note ?? "not available", "", ""])
            return columns(rows, right: [1, 2, 3])
        }
        rows.append([
            "libfido2: open, assertion with a touch, verify (the floor)", Format.duration(assertion.medianMicroseconds),
            Format.duration(assertion.p99Microseconds), "1.00×",
        ])
        rows.append([
            ".companion item read in this process, with a touch", Format.duration(read.medianMicroseconds),
            Format.duration(read.p99Microseconds), result.readOverAssertion.map(Format.ratio) ?? "",
        ])
        return columns(rows, right: [1, 2, 3])
    }

    private static func secretServiceTable(_ result: SecretServiceResult) -> String {
        let items = Format.count(result.items)
        var rows: [[String]] = [
            ["Secret Service (each on a private bus, interleaved)", "Items", "Median", "p99", "Ratio"]
        ]
        guard result.note == nil else {
            rows.append(["keychaind --secret-service", items, "—", result.note ?? ""])
            return columns(rows, right: [1, 2, 3])
        }
        let gnomeNote = result.gnomeNote ?? "not available"
        func pair(
            _ title: String, ours: Summary?, theirs: Summary?, theirTitle: String, theirItems: String,
            ratio: String?, note: String?
        ) {
            if let ours {
                rows.append([
                    title + ", keychaind", items, Format.duration(ours.medianMicroseconds),
                    Format.duration(ours.p99Microseconds), ratio ?? "",
                ])
            } else {
                rows.append([title + ", keychaind", items, "—", note ?? "not available"])
            }
            if let theirs {
                rows.append([
                    title + ", " + theirTitle, theirItems, Format.duration(theirs.medianMicroseconds),
                    Format.duration(theirs.p99Microseconds), "",
                ])
            } else {
                rows.append([title + ", " + theirTitle, theirItems, "—", note ?? gnomeNote])
            }
        }
        pair(
            "secret-tool lookup process", ours: result.secretToolOurs, theirs: result.secretToolGnome,
            theirTitle: "GNOME Keyring (login collection)", theirItems: items,
            ratio: result.secretToolOursOverGnome.map { "ours ÷ GNOME " + Format.ratio($0) },
            note: result.secretToolNote)
        pair(
            "SearchItems + GetSecrets in process (one connection, plain session)", ours: result.lookupOurs,
            theirs: result.lookupGnome, theirTitle: "GNOME Keyring (login collection)", theirItems: items,
            ratio: result.lookupGnomeOverOurs.map { "GNOME ÷ ours " + Format.ratio($0) }, note: nil)
        if let floor = result.lookupFloor {
            rows.append([
                "two Peer.Ping round trips to keychaind (the bus's floor, same rounds)", items,
                Format.duration(floor.medianMicroseconds), Format.duration(floor.p99Microseconds),
                result.lookupOverFloor.map { "SearchItems + GetSecrets ÷ floor " + Format.ratio($0) } ?? "",
            ])
        }
        pair(
            "CreateItem (same connection)", ours: result.createOurs, theirs: result.createGnomeLogin,
            theirTitle: "GNOME Keyring (login collection, encrypted on disk)", theirItems: items,
            ratio: result.createGnomeOverOurs.map { "GNOME ÷ ours " + Format.ratio($0) }, note: nil)
        pair(
            "OpenSession, Diffie-Hellman (same connection)", ours: result.openSessionOurs,
            theirs: result.openSessionGnome, theirTitle: "GNOME Keyring", theirItems: items,
            ratio: result.openSessionOursOverGnome.map { "ours ÷ GNOME " + Format.ratio($0) }, note: nil)
        pair(
            "Properties.GetAll of every item at once, to the last reply (libsecret's search --all)",
            ours: result.loadAllOurs, theirs: result.loadAllGnome, theirTitle: "GNOME Keyring", theirItems: items,
            ratio: result.loadAllOursOverGnome.map { "ours ÷ GNOME " + Format.ratio($0) }, note: result.loadAllNote)
        pair(
            "Secret portal RetrieveSecret, sandboxed app through xdg-desktop-portal", ours: result.portalOurs,
            theirs: result.portalGnome, theirTitle: "GNOME Keyring as the backend", theirItems: items,
            ratio: result.portalOursOverGnome.map { "ours ÷ GNOME " + Format.ratio($0) },
            note: result.portalNote ?? result.portalGnomeNote)
        if let floor = result.portalFloor {
            rows.append([
                "a Peer.Ping to xdg-desktop-portal (the portal's floor, same rounds)", "",
                Format.duration(floor.medianMicroseconds), Format.duration(floor.p99Microseconds),
                result.portalOverFloor.map { "RetrieveSecret ÷ floor " + Format.ratio($0) } ?? "",
            ])
        }
        if let moveIn = result.moveIn, let floor = result.moveInFloor {
            rows.append([
                "moving GNOME Keyring's encrypted login file in (read, decrypt, add in one transaction)", items,
                Format.duration(moveIn.medianMicroseconds), Format.duration(moveIn.p99Microseconds),
                result.moveInOverFloor.map { "÷ floor " + Format.ratio($0) } ?? "",
            ])
            rows.append([
                "the same items added in one transaction (the floor)", items, Format.duration(floor.medianMicroseconds),
                Format.duration(floor.p99Microseconds), "",
            ])
        } else {
            rows.append(["moving GNOME Keyring's login file in", items, "—", result.moveInNote ?? gnomeNote])
        }
        if let fill = result.gnomeFillSeconds {
            let line =
                "GNOME Keyring started with the items in its login collection and encrypted them in "
                + String(format: "%.1f s", fill)
            rows.append([line, "", "", "", ""])
        }
        return columns(rows, right: [1, 2, 3])
    }

    private static func targetsTable(_ report: BenchmarkReport) -> String {
        var rows: [[String]] = [["Target", "Limit", "Result", "Measured"]]
        for target in report.targets {
            let verdict =
                switch target.met {
                case true?: "met"
                case false?: "MISSED"
                case nil: "not measured"
                }
            rows.append([target.name, target.limit, verdict, target.measured])
        }
        return columns(rows, right: [])
    }
}
