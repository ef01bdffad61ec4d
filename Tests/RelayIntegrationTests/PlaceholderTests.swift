import XCTest

final class PlaceholderIntegrationTests: XCTestCase {}
