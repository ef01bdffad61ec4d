import Foundation

enum Report {
    static func write(_ opts: Options) -> Int32 { 0 }
}
