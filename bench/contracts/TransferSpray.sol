// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IERC20Transfer {
    function transfer(address to, uint256 value) external returns (bool);
}

/// @notice Benchmark helper (never deployed outside the bench): makes `count` real
/// token transfers in one transaction, so the token itself emits `count` Transfer logs.
contract TransferSpray {
    function spray(address token, address to, uint256 count) external {
        for (uint256 i = 0; i < count; ++i) {
            require(IERC20Transfer(token).transfer(to, 1), "transfer failed");
        }
    }
}
