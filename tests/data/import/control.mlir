module @jit_control attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<3x4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xf32> {jax.result_info = "result[3]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %arg0, %iterArg_4 = %c, %iterArg_5 = %arg0) : tensor<3x4xf32>, tensor<i32>, tensor<3x4xf32>
    cond {
      %c_6 = stablehlo.constant dense<3> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg_4, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7 = func.call @closed_call(%iterArg, %iterArg_5) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg_4, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %8, %7 : tensor<3x4xf32>, tensor<i32>, tensor<3x4xf32>
    }
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare GT, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.convert %1 : (tensor<i1>) -> tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %8 = stablehlo.multiply %arg0, %7 : tensor<3x4xf32>
      stablehlo.return %8 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %8 = stablehlo.add %arg0, %7 : tensor<3x4xf32>
      stablehlo.return %8 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<2> : tensor<i32>
    %4 = stablehlo.clamp %c_1, %arg1, %c_2 : tensor<i32>
    %5 = "stablehlo.case"(%4) ({
      stablehlo.return %arg0 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %8 = stablehlo.multiply %arg0, %7 : tensor<3x4xf32>
      stablehlo.return %8 : tensor<3x4xf32>
    }, {
      %7 = stablehlo.sine %arg0 : tensor<3x4xf32>
      stablehlo.return %7 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:4 = stablehlo.while(%iterArg = %arg2, %iterArg_4 = %arg0, %iterArg_5 = %c_3, %iterArg_6 = %arg0) : tensor<i32>, tensor<3x4xf32>, tensor<i32>, tensor<3x4xf32>
    cond {
      %7 = stablehlo.convert %iterArg_5 : tensor<i32>
      %8 = stablehlo.compare LT, %7, %iterArg, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %8 : tensor<i1>
    } do {
      %c_7 = stablehlo.constant dense<1> : tensor<i32>
      %7 = stablehlo.add %iterArg_5, %c_7 : tensor<i32>
      %8 = stablehlo.tanh %iterArg_6 : tensor<3x4xf32>
      %9 = stablehlo.multiply %8, %iterArg_4 : tensor<3x4xf32>
      %10 = stablehlo.add %iterArg_6, %9 : tensor<3x4xf32>
      stablehlo.return %iterArg, %iterArg_4, %7, %10 : tensor<i32>, tensor<3x4xf32>, tensor<i32>, tensor<3x4xf32>
    }
    return %0#2, %3, %5, %6#3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %1 = stablehlo.multiply %arg1, %0 : tensor<3x4xf32>
    %2 = stablehlo.slice %arg0 [0:1, 0:1] : (tensor<3x4xf32>) -> tensor<1x1xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x1xf32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %5 = stablehlo.add %1, %4 : tensor<3x4xf32>
    return %5 : tensor<3x4xf32>
  }
}
