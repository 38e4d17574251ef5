// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A contract that produces what the tests need: storage in a plain slot and a
/// mapping, events with indexed and data arguments, and every kind of revert.
contract Probe {
    /// slot 0
    uint256 public stored;
    /// slot 1: balances[a] lives at keccak256(abi.encode(a, uint256(1)))
    mapping(address => uint256) public balances;

    event Stored(address indexed who, uint256 indexed value, bytes note);
    event Anonymous(uint256 value) anonymous;

    error Custom(uint256 code, string why);

    constructor(uint256 initial) {
        stored = initial;
    }

    function store(uint256 value, bytes calldata note) external {
        stored = value;
        balances[msg.sender] = value;
        emit Stored(msg.sender, value, note);
    }

    function storeMany(uint256 count) external {
        for (uint256 i = 0; i < count; i++) {
            emit Stored(msg.sender, i, "");
        }
    }

    function emitAnonymous(uint256 value) external {
        emit Anonymous(value);
    }

    function fail(string calldata reason) external pure {
        revert(reason);
    }

    function failPanic() external pure returns (uint256) {
        uint256 zero = 0;
        return 1 / zero;
    }

    function failCustom(uint256 code) external pure {
        revert Custom(code, "custom error");
    }

    function failEmpty() external pure {
        revert();
    }

    /// Burns gas in a loop, so the estimate depends on n.
    function burn(uint256 n) external pure returns (uint256 acc) {
        for (uint256 i = 0; i < n; i++) {
            acc = uint256(keccak256(abi.encode(acc, i)));
        }
    }
}
