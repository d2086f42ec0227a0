module @jit_elementwise attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<3x4xi32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<3x4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xi32> {jax.result_info = "result[3]"}, tensor<3x4xf32> {jax.result_info = "result[4]"}, tensor<3x4xi1> {jax.result_info = "result[5]"}, tensor<3x4xf32> {jax.result_info = "result[6]"}, tensor<3x4xf32> {jax.result_info = "result[7]"}) {
    %0 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
    %1 = stablehlo.exponential %arg0 : tensor<3x4xf32>
    %2 = stablehlo.abs %arg1 : tensor<3x4xf32>
    %3 = stablehlo.log_plus_one %2 : tensor<3x4xf32>
    %4 = call @_where(%0, %1, %3) : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %cst = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %5 = call @clip(%arg0, %cst, %cst_0) : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
    %6 = stablehlo.abs %arg1 : tensor<3x4xf32>
    %7 = stablehlo.sqrt %6 : tensor<3x4xf32>
    %8 = stablehlo.multiply %5, %7 : tensor<3x4xf32>
    %9 = stablehlo.multiply %arg1, %arg1 : tensor<3x4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %11 = stablehlo.add %10, %9 : tensor<3x4xf32>
    %12 = stablehlo.rsqrt %11 : tensor<3x4xf32>
    %13 = stablehlo.add %8, %12 : tensor<3x4xf32>
    %14 = stablehlo.negate %arg0 : tensor<3x4xf32>
    %15 = stablehlo.exponential %14 : tensor<3x4xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %17 = stablehlo.add %16, %15 : tensor<3x4xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %19 = stablehlo.divide %18, %17 : tensor<3x4xf32>
    %20 = stablehlo.sine %arg1 : tensor<3x4xf32>
    %21 = stablehlo.cosine %arg0 : tensor<3x4xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<3x4xf32>
    %23 = stablehlo.subtract %19, %22 : tensor<3x4xf32>
    %cst_4 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %25 = stablehlo.multiply %arg0, %24 : tensor<3x4xf32>
    %26 = stablehlo.floor %25 : tensor<3x4xf32>
    %27 = stablehlo.add %23, %26 : tensor<3x4xf32>
    %28 = stablehlo.sign %arg1 : tensor<3x4xf32>
    %29 = stablehlo.add %27, %28 : tensor<3x4xf32>
    %c = stablehlo.constant dense<3> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %31 = stablehlo.multiply %arg2, %30 : tensor<3x4xi32>
    %c_5 = stablehlo.constant dense<7> : tensor<i32>
    %32 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %33 = stablehlo.subtract %31, %32 : tensor<3x4xi32>
    %c_6 = stablehlo.constant dense<2> : tensor<i32>
    %34 = call @floor_divide(%33, %c_6) : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x4xi32>
    %c_7 = stablehlo.constant dense<2> : tensor<i32>
    %35 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %36 = stablehlo.maximum %arg2, %35 : tensor<3x4xi32>
    %37 = stablehlo.add %34, %36 : tensor<3x4xi32>
    %c_8 = stablehlo.constant dense<1> : tensor<i32>
    %38 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %39 = stablehlo.minimum %arg2, %38 : tensor<3x4xi32>
    %40 = stablehlo.subtract %37, %39 : tensor<3x4xi32>
    %41 = stablehlo.convert %arg0 : (tensor<3x4xf32>) -> tensor<3x4xi32>
    %42 = stablehlo.add %41, %arg2 : tensor<3x4xi32>
    %43 = stablehlo.convert %42 : (tensor<3x4xi32>) -> tensor<3x4xf32>
    %44 = stablehlo.abs %arg0 : tensor<3x4xf32>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %45 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %46 = stablehlo.add %45, %44 : tensor<3x4xf32>
    %47 = stablehlo.divide %43, %46 : tensor<3x4xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %49 = stablehlo.compare GT, %arg0, %48, FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
    %cst_11 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %51 = stablehlo.compare GT, %arg1, %50, FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
    %52 = stablehlo.not %51 : tensor<3x4xi1>
    %53 = stablehlo.and %49, %52 : tensor<3x4xi1>
    %cst_12 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %55 = stablehlo.compare LT, %arg0, %54, FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
    %56 = stablehlo.or %53, %55 : tensor<3x4xi1>
    %cst_13 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %58 = stablehlo.power %arg0, %57 : tensor<3x4xf32>
    %59 = stablehlo.abs %arg1 : tensor<3x4xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %61 = stablehlo.add %59, %60 : tensor<3x4xf32>
    %62 = stablehlo.power %61, %arg0 : tensor<3x4xf32>
    %63 = stablehlo.subtract %58, %62 : tensor<3x4xf32>
    %64 = stablehlo.tanh %arg0 : tensor<3x4xf32>
    %65 = stablehlo.negate %arg1 : tensor<3x4xf32>
    %66 = stablehlo.add %64, %65 : tensor<3x4xf32>
    return %4, %13, %29, %40, %47, %56, %63, %66 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xf32>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @_where(%arg0: tensor<3x4xi1>, %arg1: tensor<3x4xf32>, %arg2: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x4xi1>, tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func private @clip(%arg0: tensor<3x4xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<3x4xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<3x4xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<3x4xf32>
    return %5 : tensor<3x4xf32>
  }
  func.func private @floor_divide(%arg0: tensor<3x4xi32>, %arg1: tensor<i32>) -> tensor<3x4xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %2 = stablehlo.divide %arg0, %1 : tensor<3x4xi32>
    %3 = stablehlo.sign %arg0 : tensor<3x4xi32>
    %4 = stablehlo.sign %0 : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %6 = stablehlo.compare NE, %3, %5, SIGNED : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %7 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %8 = stablehlo.remainder %arg0, %7 : tensor<3x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %10 = stablehlo.compare NE, %8, %9, SIGNED : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %11 = stablehlo.and %6, %10 : tensor<3x4xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %13 = stablehlo.subtract %2, %12 : tensor<3x4xi32>
    %14 = call @_where_0(%11, %13, %2) : (tensor<3x4xi1>, tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
    return %14 : tensor<3x4xi32>
  }
  func.func private @_where_0(%arg0: tensor<3x4xi1>, %arg1: tensor<3x4xi32>, %arg2: tensor<3x4xi32>) -> tensor<3x4xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x4xi1>, tensor<3x4xi32>
    return %0 : tensor<3x4xi32>
  }
}
